package maskscan

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestScanCorruptCache: whatever the cache file holds, the scan is right, and a
// cache that cannot be used is replaced by one that can.
func TestScanCorruptCache(t *testing.T) {
	root := t.TempDir()
	build(t, root, ".env", "a/b/.env.local", "a/c/", "d/x")
	want := []string{".env", "a/b/.env.local"}
	good := filepath.Join(t.TempDir(), "good")
	scanT(t, later(), root, defaults, good)
	valid, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if decode(valid, root, defaults.key(), time.Now().UnixNano()) == nil {
		t.Fatal("the cache just written does not decode")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	// No damaged cache decodes.
	for n := range len(valid) {
		if decode(valid[:n], root, defaults.key(), time.Now().UnixNano()) != nil {
			t.Errorf("the cache truncated to %d bytes decodes", n)
		}
	}
	for i := range len(valid) * 8 {
		flipped := append([]byte(nil), valid...)
		flipped[i/8] ^= 1 << (i % 8)
		if decode(flipped, root, defaults.key(), time.Now().UnixNano()) != nil {
			t.Errorf("the cache with bit %d flipped decodes", i)
		}
	}
	// Nor does a foreign one, and the scan goes on without it.
	cases := map[string][]byte{
		"empty":        {},
		"random":       random,
		"magic only":   []byte(magic),
		"random tail":  append([]byte(magic+"\x00\x00\x00\x00"), random...),
		"other format": append([]byte("dsmscan\x03"), valid[len(magic):]...),
		// The first format checked CRC-32C: a cache it wrote is not read as this one.
		"format 1":  append([]byte("dsmscan\x01"), valid[len(magic):]...),
		"CRC-32C":   withCRC(valid, crc32.Checksum(valid[headerSize:], crc32.MakeTable(crc32.Castagnoli))),
		"trailing":  append(valid[:len(valid):len(valid)], 0),
		"truncated": valid[:len(valid)/2],
		"flipped":   append(valid[:len(valid)-1:len(valid)-1], valid[len(valid)-1]^4),
	}
	cache := filepath.Join(t.TempDir(), "cache")
	for name, data := range cases {
		if err := os.WriteFile(cache, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, st := scanT(t, later(), root, defaults, cache)
		equal(t, name, rel(root, got), want)
		if st.reads != 5 || !st.wrote { // the root, a, a/b, a/c and d
			t.Errorf("%s: %+v, want every directory read and the cache rewritten", name, st)
		}
		if _, st := scanT(t, later(), root, defaults, cache); st.reads != 0 {
			t.Errorf("%s: the rewritten cache was not used: %+v", name, st)
		}
	}
	// A cache that cannot be written: the scan is still right.
	got, st := scanT(t, later(), root, defaults, filepath.Join(root, ".env", "cache"))
	equal(t, "unwritable cache", rel(root, got), want)
	if st.wrote {
		t.Error("wrote a cache below a file")
	}
}

// TestScanRacy: a directory changed in the same timestamp tick as the scan that
// read it keeps its stamp; the next scan must read it again all the same. The
// filesystem is made as coarse as can be: every stamp has the same times.
func TestScanRacy(t *testing.T) {
	root := t.TempDir()
	build(t, root, "a/b/c/main.go", ".env")
	tick := time.Now().Truncate(time.Second)
	coarse := func(st *stamp) { st.mtime, st.ctime = tick.UnixNano(), tick.UnixNano() }
	at := func(d time.Duration) scanner {
		return scanner{now: func() time.Time { return tick.Add(d) }, workers: 2, restamp: coarse}
	}
	change := func(cache string, s scanner) []string {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(root, "a/b/c/.env")); err != nil {
			t.Fatal(err)
		}
		scanT(t, s, root, defaults, cache)
		if err := os.WriteFile(filepath.Join(root, "a/b/c/.env"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		got, _ := scanT(t, s, root, defaults, cache)
		return rel(root, got)
	}

	// The control: were the scan later than the margin, the change would go unseen.
	cache := filepath.Join(t.TempDir(), "cache")
	equal(t, "a late scan (the stale cache)", change(cache, at(time.Hour)), []string{".env"})

	// Within the margin, the directories are racy: read again, the change is seen.
	cache = filepath.Join(t.TempDir(), "cache")
	equal(t, "a scan in the same tick", change(cache, at(time.Second)), []string{".env", "a/b/c/.env"})

	// Racy directories are read by every scan until one finds them settled, which
	// rewrites the cache; the next scan reads nothing and writes nothing.
	for _, step := range []struct {
		after time.Duration
		reads int
		wrote bool
	}{
		{time.Second, 4, false},
		{margin, 4, false},
		{margin + time.Second, 4, true},
		{margin + 2*time.Second, 0, false},
	} {
		got, st := scanT(t, at(step.after), root, defaults, cache)
		equal(t, "scan", rel(root, got), []string{".env", "a/b/c/.env"})
		if st.reads != step.reads || st.wrote != step.wrote {
			t.Errorf("scan at +%v: %+v, want %d reads, wrote %v", step.after, st, step.reads, step.wrote)
		}
	}

	// A cache written while the clock was ahead proves nothing once it is back.
	cache = filepath.Join(t.TempDir(), "cache")
	scanT(t, at(time.Hour), root, defaults, cache)
	if _, st := scanT(t, at(time.Second), root, defaults, cache); st.reads != 4 {
		t.Errorf("scan after the clock went back: %+v, want every directory read", st)
	}
}

// TestScanNoWrite: a scan that changes nothing leaves the cache file alone.
func TestScanNoWrite(t *testing.T) {
	root := t.TempDir()
	build(t, root, ".env", "a/b/")
	cache := filepath.Join(t.TempDir(), "sub", "cache") // its directory is created
	scanT(t, later(), root, defaults, cache)
	before, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v, want 0600", before.Mode())
	}
	scanT(t, later(), root, defaults, cache)
	after, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Error("a scan that found nothing changed rewrote the cache")
	}
	if ents, _ := os.ReadDir(filepath.Dir(cache)); len(ents) != 1 {
		t.Errorf("cache directory holds %d files, want 1", len(ents))
	}
}

// TestScanReadOnly: a read-only scan (a --dry-run) uses the cache and never writes
// it, not even when it found changes.
func TestScanReadOnly(t *testing.T) {
	root := t.TempDir()
	build(t, root, ".env", "a/b/")
	cache := filepath.Join(t.TempDir(), "cache")
	if _, err := ScanReadOnly(root, defaults, cache); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("a read-only scan wrote the cache: %v", err)
	}
	scanT(t, later(), root, defaults, cache)
	before, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	build(t, root, "a/.env")
	ms, err := ScanReadOnly(root, defaults, cache)
	if err != nil || len(ms) != 2 {
		t.Fatalf("ScanReadOnly = %v, %v; want both .env files", ms, err)
	}
	if after, err := os.Stat(cache); err != nil || !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Error("a read-only scan rewrote the cache")
	}
}

// withCRC is a copy of the cache file data with crc in its checksum field.
func withCRC(data []byte, crc uint32) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[len(magic):], crc)
	return out
}
