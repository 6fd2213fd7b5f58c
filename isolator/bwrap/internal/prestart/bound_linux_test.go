package prestart

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// saveN saves n records with keys of their own, the i-th last written i hours ago
// plus an hour, and returns their keys, the oldest last.
func saveN(t *testing.T, s Store, n int, now time.Time) []string {
	t.Helper()
	var keys []string
	for i := range n {
		r := baseRecord()
		r.Key = LaunchKey(1000, "/p", []string{strconv.Itoa(i)})
		must(t, s.Save(r))
		at := now.Add(-time.Duration(i+1) * time.Hour)
		must(t, os.Chtimes(filepath.Join(s.Dir, r.Key), at, at))
		keys = append(keys, r.Key)
	}
	return keys
}

func listed(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Save keeps at most MaxRecords records: the ones least recently written or used
// (Touch) go.
func TestStoreBound(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "prestart")}
	now := time.Now()
	keys := saveN(t, s, MaxRecords, now)
	if n := len(listed(t, s.Dir)); n != MaxRecords {
		t.Fatalf("%d records, want %d", n, MaxRecords)
	}
	// The oldest used now: it stays, the second oldest goes.
	must(t, s.Touch(keys[MaxRecords-1]))
	r := baseRecord()
	r.Key = LaunchKey(1000, "/p", []string{"new"})
	must(t, s.Save(r))
	names := listed(t, s.Dir)
	if len(names) != MaxRecords {
		t.Errorf("%d records after one more, want %d: %v", len(names), MaxRecords, names)
	}
	for _, k := range []string{r.Key, keys[MaxRecords-1], keys[0]} {
		if !slices.Contains(names, k) {
			t.Errorf("record %s was removed", k)
		}
	}
	if slices.Contains(names, keys[MaxRecords-2]) {
		t.Errorf("the least recently used record %s is still there", keys[MaxRecords-2])
	}
}

// Sweep removes records older than its age and what an interrupted Save left, and
// nothing else: a link, a directory, a FIFO named as a record, another file, are
// left alone, and nothing a link names is touched.
func TestStoreSweep(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "prestart")}
	now := time.Now()
	keys := saveN(t, s, 4, now.Add(-47*time.Hour)) // 48 to 51 hours old
	fresh := baseRecord()
	fresh.Key = LaunchKey(1000, "/p", []string{"fresh"})
	must(t, s.Save(fresh))
	old := now.Add(-100 * time.Hour)
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("keep"), 0o600))
	must(t, os.Chtimes(victim, old, old))
	must(t, os.Mkdir(filepath.Join(outside, "dir"), 0o700))
	must(t, os.WriteFile(filepath.Join(outside, "dir", "f"), []byte("keep"), 0o600))
	planted := map[string]func(string){
		LaunchKey(1, "/link", nil): func(p string) { must(t, os.Symlink(victim, p)) },
		LaunchKey(1, "/dirlink", nil): func(p string) {
			must(t, os.Symlink(filepath.Join(outside, "dir"), p))
		},
		LaunchKey(1, "/dir", nil): func(p string) {
			must(t, os.Mkdir(p, 0o700))
			must(t, os.WriteFile(filepath.Join(p, "f"), []byte("keep"), 0o600))
			must(t, os.Chtimes(filepath.Join(p, "f"), old, old))
		},
		LaunchKey(1, "/fifo", nil): func(p string) { must(t, syscall.Mkfifo(p, 0o600)) },
		"other":                    func(p string) { must(t, os.WriteFile(p, []byte("keep"), 0o600)) },
		".tmp-link":                func(p string) { must(t, os.Symlink(victim, p)) },
	}
	for name, plant := range planted {
		p := filepath.Join(s.Dir, name)
		plant(p)
		ts := []syscall.Timespec{syscall.NsecToTimespec(old.UnixNano()), syscall.NsecToTimespec(old.UnixNano())}
		must(t, utimesNoFollow(p, ts))
	}
	oldTmp := filepath.Join(s.Dir, ".tmp-123")
	newTmp := filepath.Join(s.Dir, ".tmp-456")
	must(t, os.WriteFile(oldTmp, nil, 0o600))
	must(t, os.Chtimes(oldTmp, old, old))
	must(t, os.WriteFile(newTmp, nil, 0o600))

	want := []string{filepath.Join(s.Dir, ".tmp-123")}
	for _, k := range keys[1:] { // 49 to 51 hours old
		want = append(want, filepath.Join(s.Dir, k))
	}
	slices.Sort(want)
	for _, dry := range []bool{true, false} {
		got, err := s.Sweep(48*time.Hour+30*time.Minute, now, dry)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Sweep(dry run %v) = %q, %v; want %q", dry, got, err, want)
		}
	}
	names := listed(t, s.Dir)
	for name := range planted {
		if !slices.Contains(names, name) {
			t.Errorf("%s, not a record, was removed", name)
		}
	}
	for _, k := range []string{keys[0], fresh.Key, ".tmp-456"} {
		if !slices.Contains(names, k) {
			t.Errorf("%s, newer than the age, was removed", k)
		}
	}
	for _, p := range []string{victim, filepath.Join(outside, "dir", "f"), filepath.Join(s.Dir, LaunchKey(1, "/dir", nil), "f")} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
			t.Errorf("%s: %q, %v: a planted name was followed", p, b, err)
		}
	}
	// Age 0: every record written before now; the record saved after now and a
	// Save's file under a minute old stay.
	if got, err := s.Sweep(0, now, false); err != nil || !slices.Equal(got, []string{filepath.Join(s.Dir, keys[0])}) {
		t.Errorf("Sweep(0) = %q, %v; want %s", got, err, keys[0])
	}
}

// Sweep refuses a store directory that is a link, and removes nothing through it.
func TestStoreSweepLinkedDir(t *testing.T) {
	real := Store{Dir: filepath.Join(t.TempDir(), "prestart")}
	saveN(t, real, 2, time.Now().Add(-100*time.Hour))
	link := filepath.Join(t.TempDir(), "prestart")
	must(t, os.Symlink(real.Dir, link))
	if got, err := (Store{Dir: link}).Sweep(time.Hour, time.Now(), false); err == nil || len(got) != 0 {
		t.Errorf("Sweep through a linked directory = %q, %v; want an error", got, err)
	}
	if n := len(listed(t, real.Dir)); n != 2 {
		t.Errorf("%d records left in the linked directory, want 2", n)
	}
	if got, err := (Store{Dir: filepath.Join(t.TempDir(), "none")}).Sweep(time.Hour, time.Now(), false); err != nil || got != nil {
		t.Errorf("Sweep of no directory = %q, %v", got, err)
	}
}

func utimesNoFollow(path string, ts []syscall.Timespec) error {
	uts := []unix.Timespec{unix.Timespec(ts[0]), unix.Timespec(ts[1])}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, uts, unix.AT_SYMLINK_NOFOLLOW)
}

// Forget removes the launch's record and, when there was one, the records of the same
// project (the same session /tmp directory), reading each as Load does: another
// project's record, one with /tmp in memory, and a link named as a record pointing to
// one of the project's records outside the directory stay, and so does the link's
// target. A launch with no record of its own removes nothing.
func TestStoreForget(t *testing.T) {
	root := t.TempDir()
	s := Store{Dir: filepath.Join(root, "prestart")}
	save := func(name, tmpBase string) string {
		r := baseRecord()
		r.Key, r.TmpBase = LaunchKey(1000, "/p", []string{name}), tmpBase
		must(t, s.Save(r))
		return r.Key
	}
	proj, other := stateRoot+"/app-1/tmp", stateRoot+"/other-2/tmp"
	own := save("own", proj)
	sibling := save("sibling", proj)
	another := save("another", other)
	inMemory := save("tmpfs", "")
	// A record of the project's kept outside, and a link to it under a record's name.
	outside := filepath.Join(root, "outside")
	must(t, os.Mkdir(outside, 0o700))
	ext := Store{Dir: outside}
	r := baseRecord()
	r.Key, r.TmpBase = LaunchKey(1000, "/p", []string{"linked"}), proj
	must(t, ext.Save(r))
	must(t, os.Symlink(filepath.Join(outside, r.Key), filepath.Join(s.Dir, r.Key)))

	if n, err := s.Forget(LaunchKey(1000, "/p", []string{"none"}), proj); err != nil || n != 0 {
		t.Errorf("Forget without a record of its own: %d, %v; want 0, nil", n, err)
	}
	if got := listed(t, s.Dir); len(got) != 5 {
		t.Errorf("after a Forget without a record of its own: %v, want the 5 names as they were", got)
	}
	n, err := s.Forget(own, proj)
	if err != nil || n != 2 {
		t.Errorf("Forget: %d, %v; want 2 (its own and the sibling's), nil", n, err)
	}
	want := []string{another, inMemory, r.Key}
	slices.Sort(want)
	if got := listed(t, s.Dir); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v (sibling %s gone)", got, want, sibling)
	}
	if _, err := os.Stat(filepath.Join(outside, r.Key)); err != nil {
		t.Errorf("the linked record outside was touched: %v", err)
	}
}
