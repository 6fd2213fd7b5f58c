package tmpdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// A sandbox can leave directories its owner cannot list (000) or empty (0500) in
// its /tmp; they must not keep the session dir from going. openUp gives them their
// owner's rwx back (checked on the modes, so the test holds as root too, which
// removes them anyway), and never follows a link the sandbox left to a host dir.
func TestOpenUpLockedLeftovers(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := Acquire(filepath.Join(base, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	locked := filepath.Join(s.Path, "locked")
	ro := filepath.Join(s.Path, "ro")
	for _, d := range []string{filepath.Join(locked, "inner"), filepath.Join(ro, "inner")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(locked, "inner", "tohost")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(s.Path, "tohost")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    string
		mode os.FileMode
	}{{filepath.Join(locked, "inner"), 0}, {locked, 0}, {ro, 0o500}} {
		if err := os.Chmod(c.p, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	parent, err := unix.Open(base+"/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	openUp(parent, s.Name)
	unix.Close(parent)
	for _, d := range []string{s.Path, locked, filepath.Join(locked, "inner"), ro, filepath.Join(ro, "inner")} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, st.Mode().Perm(), err)
		}
	}
	if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("a link to a host dir was followed: its mode is %v (%v), was 0750", st.Mode().Perm(), err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir left behind: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the host dir a link named went: %v", err)
	}
}

// A directory its owner cannot list, deeper below the session dir than any fixed
// bound, must not keep the session dir from going either: os.RemoveAll walks a tree
// of any depth, so openUp must reach as deep as it does.
func TestOpenUpDeepLockedLeftover(t *testing.T) {
	s, err := Acquire(filepath.Join(t.TempDir(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, err := unix.Open(s.Path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	if err := unix.Mkdirat(fd, "locked", 0o755); err != nil {
		t.Fatal(err)
	}
	lf, err := unix.Openat(fd, "locked/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(lf)
	if err := unix.Fchmodat(fd, "locked", 0, 0); err != nil {
		t.Fatal(err)
	}
	parent, err := unix.Open(filepath.Dir(s.Path), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	openUp(parent, s.Name)
	unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "locked", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&0o777 != 0o700 {
		t.Errorf("a locked dir 301 levels down: mode %o, %v; want 0700", st.Mode&0o777, err)
	}
	unix.Close(fd)
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir left behind: %v", err)
	}
}
