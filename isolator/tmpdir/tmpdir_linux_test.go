package tmpdir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestAcquireRelease(t *testing.T) {
	base := filepath.Join(t.TempDir(), "tmp")
	s, err := Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("session dir %s: %v %v", s.Path, fi, err)
	}
	if s.Lost() {
		t.Fatal("fresh session reported lost")
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir still there after Release: %v", err)
	}
}

func TestLost(t *testing.T) {
	s, err := Acquire(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if err := os.RemoveAll(s.Path); err != nil {
		t.Fatal(err)
	}
	if !s.Lost() {
		t.Fatal("removed session dir not reported lost")
	}
}

func TestCleanOrphans(t *testing.T) {
	base := t.TempDir()
	old := time.Now().Add(-49 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	orphan := mk("orphan", old)
	young := mk("young", time.Now())
	live, err := Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if err := os.Chtimes(live.Path, old, old); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}

	if n := CleanOrphans(base, time.Now(), MaxAge); n != 1 {
		t.Fatalf("removed %d dirs, want 1", n)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Error("old unlocked dir not removed")
	}
	for _, p := range []string{young, live.Path, target, filepath.Join(base, "link")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// victim is a directory outside the session base with one file in it, and a check that
// both are still there.
func victim(t *testing.T) (dir string, intact func()) {
	t.Helper()
	dir = t.TempDir()
	f := filepath.Join(dir, "keep")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, func() {
		t.Helper()
		for _, p := range []string{f, empty} {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("%s, outside the session dir, was removed: %v", p, err)
			}
		}
	}
}

// What the sandbox leaves in its /tmp (files, directories, symlinks to the host's
// directories and files) is removed with the session dir; nothing a link points at is.
func TestReleaseNonEmpty(t *testing.T) {
	s, err := Acquire(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, intact := victim(t)
	for _, step := range []error{
		os.MkdirAll(filepath.Join(s.Path, "a", "b"), 0o700),
		os.WriteFile(filepath.Join(s.Path, "a", "b", "f"), []byte("x"), 0o600),
		os.Symlink(dir, filepath.Join(s.Path, "dirlink")),
		os.Symlink(filepath.Join(dir, "empty"), filepath.Join(s.Path, "emptylink")),
		os.Symlink(filepath.Join(dir, "keep"), filepath.Join(s.Path, "filelink")),
		os.Symlink(dir, filepath.Join(s.Path, "a", "deeplink")),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir still there after Release: %v", err)
	}
	intact()
}

// A session dir swapped on the host for a symlink to another directory: Release
// removes the link, never the directory it points at, even when that one is empty
// (which a removal that followed the link would take with one rmdir).
func TestReleaseReplacedByLink(t *testing.T) {
	for _, target := range []string{"", "empty"} {
		t.Run("to"+target, func(t *testing.T) {
			s, err := Acquire(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir, intact := victim(t)
			if err := os.Remove(s.Path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, target), s.Path); err != nil {
				t.Fatal(err)
			}
			if !s.Lost() {
				t.Error("replaced session dir not reported lost")
			}
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
				t.Errorf("the link in the session dir's place is still there: %v", err)
			}
			intact()
		})
	}
}

// A session dir already gone (removed on the host) is no error.
func TestReleaseGone(t *testing.T) {
	s, err := Acquire(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.Path); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatalf("Release of a removed session dir: %v", err)
	}
}

// RemoveEmpty takes only an empty session dir; what the sandbox left waits for
// Remove, which takes it all.
func TestRemoveEmpty(t *testing.T) {
	s, err := Acquire(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := filepath.Join(s.Path, "left")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.RemoveEmpty() {
		t.Fatal("RemoveEmpty reported a session dir with a file in it removed")
	}
	if _, err := os.Stat(f); err != nil {
		t.Fatalf("RemoveEmpty touched what was in the session dir: %v", err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir still there after Remove: %v", err)
	}
	if !s.RemoveEmpty() {
		t.Fatal("RemoveEmpty after Remove: want removed")
	}
}

// Prune removes, in every project's tmp/, the unlocked session dirs over PruneAge
// old, and names them; a live session's dir, a new one, a symbolic link (and what it
// points at) and a file stay. A dry run names the same and removes nothing.
func TestPrune(t *testing.T) {
	state := t.TempDir()
	outside := t.TempDir()
	old := time.Now().Add(-2 * PruneAge)
	live, err := Acquire(filepath.Join(state, "a-1", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	mk := func(rel string, mtime time.Time) string {
		p := filepath.Join(state, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deadA := mk("a-1/tmp/dead", old)
	deadB := mk("b-2/tmp/dead", old)
	fresh := mk("b-2/tmp/fresh", time.Now())
	if err := os.Chtimes(live.Path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "b-2/tmp/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "b-2/tmp/file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "not-a-project"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{deadA, deadB}
	for _, dry := range []bool{true, false} {
		if got := Prune(state, time.Now(), dry); !slices.Equal(got, want) {
			t.Errorf("Prune(dryRun %v) = %q, want %q", dry, got, want)
		}
	}
	for _, p := range []string{live.Path, fresh, outside, filepath.Join(state, "b-2/tmp/link"), filepath.Join(state, "b-2/tmp/file")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v; want it kept", p, err)
		}
	}
	for _, p := range want {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want it removed", p, err)
		}
	}
}

// Held: a session dir a run holds, or one made less than PruneAge ago, is a run going
// on; an old dir nobody holds (a killed run's) is not, nor an empty or missing base.
func TestHeld(t *testing.T) {
	base := filepath.Join(t.TempDir(), "tmp")
	now := time.Now()
	if Held(base, now) {
		t.Error("a missing base is held")
	}
	s, err := Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * PruneAge)
	if !Held(base, now) || !Held(base, later) {
		t.Errorf("a session dir a run holds: held %v now, %v later; want both", Held(base, now), Held(base, later))
	}
	s.Close() // a killed run's: its dir stays, unlocked
	if !Held(base, now) {
		t.Error("an unlocked session dir made less than PruneAge ago is not held")
	}
	if Held(base, later) {
		t.Error("an unlocked session dir older than PruneAge is held")
	}
}

// The session base may lie in a shared place (/dev/shm): Acquire refuses one that is
// not a private directory of the caller's (a link, a file, another user's, one others
// can write), where another user could swap session dirs under the session.
func TestAcquireRefusesForeignBase(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o1777); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(dir, "group")
	if err := os.Mkdir(group, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o770); err != nil {
		t.Fatal(err)
	}
	bases := []string{link, file, open, group}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		bases = append(bases, other)
	}
	for _, base := range bases {
		s, err := Acquire(base)
		if err == nil {
			t.Errorf("Acquire(%s) = %s, want a refusal of a base that is not a private directory of yours", base, s.Path)
			s.Release()
		}
	}
	if entries, _ := os.ReadDir(real); len(entries) > 0 {
		t.Errorf("a session dir was made through the link, in %s", real)
	}
}
