package rmtree

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A sandbox can leave directories its owner cannot list (000) or empty (0500) in
// what it writes (its /tmp, its home); they must not keep the tree from going:
// RemoveAll gives them their owner's rwx back (as root, which needs no rights back,
// the test shows the removal and the link alone), and never follows a link the
// sandbox left to a host dir.
func TestRemoveAllLockedLeftovers(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o750); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "tree")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(root, "locked")
	ro := filepath.Join(root, "ro")
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
	if err := os.Symlink(victim, filepath.Join(root, "tohost")); err != nil {
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
	if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("a link to a host dir was followed: its mode is %v (%v), was 0750", st.Mode().Perm(), err)
	}
	if err := RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("tree left behind: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the host dir a link named went: %v", err)
	}
}

// A directory its owner cannot list, deeper below the tree's root than any fixed
// bound, must not keep the tree from going either.
func TestRemoveAllDeepLockedLeftover(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
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
	unix.Close(fd)
	if err := RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("tree left behind: %v", err)
	}
}
