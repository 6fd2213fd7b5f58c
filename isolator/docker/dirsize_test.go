package docker

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestDirSize(t *testing.T) {
	d := t.TempDir()
	write := func(rel string, n int) {
		t.Helper()
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 10)
	write("sub/b", 20)
	write("sub/deeper/c", 30)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	// Links are never followed, to a directory or to a file.
	if err := os.Symlink(outside, filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "big"), filepath.Join(d, "sub/filelink")); err != nil {
		t.Fatal(err)
	}

	if got := dirSize(d); got != (sizeOf{bytes: 60}) {
		t.Errorf("dirSize = %+v, want 60 bytes, complete", got)
	}
	if got := dirSizeWithin(d, 100, 2, time.Minute); got.bytes != 30 || got.stopped != "stopped at depth 2" {
		t.Errorf("depth 2: %+v, want the 30 bytes above depth 2, stopped at depth 2", got)
	}
	got := dirSizeWithin(d, 3, 10, time.Minute)
	if got.stopped != "stopped after 3 entries" || got.bytes > 60 {
		t.Errorf("3 entries: %+v, want stopped after 3 entries", got)
	}
	if got := dirSize(filepath.Join(d, "link")); got != (sizeOf{}) {
		t.Errorf("dirSize of a link: %+v, want nothing (the root is not followed either)", got)
	}
	if got := dirSize(filepath.Join(d, "missing")); got != (sizeOf{}) {
		t.Errorf("dirSize of nothing: %+v", got)
	}
}

// TestDirSizeWide: a directory of many entries is read in chunks, and the walk stops
// at the entry bound without reading the rest.
func TestDirSizeWide(t *testing.T) {
	d := t.TempDir()
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := dirSizeWithin(d, 1000, 64, time.Minute); got.bytes != 1000 || got.stopped != "stopped after 1000 entries" {
		t.Errorf("wide: %+v, want 1000 bytes, stopped after 1000 entries", got)
	}
	if got := dirSizeWithin(d, 10000, 64, time.Minute); got.bytes != 3000 || got.stopped != "" {
		t.Errorf("wide, within bounds: %+v, want 3000 bytes, complete", got)
	}
}
