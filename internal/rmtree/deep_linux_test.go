package rmtree

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// lowNofile sets the process's soft RLIMIT_NOFILE to n for the test, restoring it
// after: a tree deeper than the limit, as a sandbox can make one deeper than any
// host's (the test machine's hard limit is 20000, a systemd session's 524288).
func lowNofile(t *testing.T, n uint64) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = n
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
}

// victimDir makes a directory (0750, holding the file keep) in base that a link in a
// tree to remove names: nothing of it may go.
func victimDir(t *testing.T, base string) string {
	t.Helper()
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return victim
}

// checkVictim fails the test unless victimDir's directory is as it was made.
func checkVictim(t *testing.T, victim string) {
	t.Helper()
	if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("the directory a link named: %v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Fatalf("the linked directory's file went: %v", err)
	}
}

// deepChain makes depth nested directories "d" under root (or walks those that
// exist), holding two descriptors at most, and returns a descriptor of the deepest
// (the caller closes it).
func deepChain(t *testing.T, root string, depth int) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	return fd
}

// TestRemoveAllDeeperThanNofile: a tree nested deeper than the open-file limit (what
// a sandbox leaves in its /tmp or home: a loop of mkdir and chdir) is removed, a
// link at its bottom to a host directory not followed, and directories along the
// way that their owner may not list (000) or write (0500) opened up as at any depth.
// os.RemoveAll holds a descriptor per level and stopped with "too many open files",
// leaving the tree on the host for good (the next removal fails the same way).
func TestRemoveAllDeeperThanNofile(t *testing.T) {
	base := t.TempDir()
	victim := victimDir(t, base)
	root := filepath.Join(base, "tree")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	const depth = 600
	fd := deepChain(t, root, depth)
	for _, n := range []string{"f1", "f2"} {
		f, err := unix.Openat(fd, n, unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(f)
	}
	if err := unix.Symlinkat(victim, fd, "tohost"); err != nil {
		t.Fatal(err)
	}
	// A wide level at the bottom too, and locked directories half way down.
	for _, n := range []string{"w1", "w2", "w3"} {
		if err := unix.Mkdirat(fd, n, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unix.Close(fd)
	mid := deepChain(t, root, depth/2) // the directory at depth/2, by descriptor
	if err := unix.Fchmod(mid, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fchmodat(mid, "d", 0, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(mid)

	lowNofile(t, 64)
	if err := RemoveAll(root); err != nil {
		t.Fatalf("RemoveAll: %.300v", err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("the tree is still there: %v", err)
	}
	checkVictim(t, victim)
}

// BenchmarkRemoveAll: RemoveAll against os.RemoveAll on a tree like a package
// directory (200 directories of 20 files, 4 levels), made anew for each removal.
func BenchmarkRemoveAll(b *testing.B) {
	mk := func(root string) {
		for i := range 200 {
			d := filepath.Join(root, strconv.Itoa(i%5), strconv.Itoa(i%7), strconv.Itoa(i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for j := range 20 {
				if err := os.WriteFile(filepath.Join(d, strconv.Itoa(j)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for name, rm := range map[string]func(string) error{"rmtree": RemoveAll, "os": os.RemoveAll} {
		b.Run(name, func(b *testing.B) {
			base := b.TempDir()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				root := filepath.Join(base, strconv.Itoa(i))
				mk(root)
				b.StartTimer()
				if err := rm(root); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEmptyKeepsTheDirectory: Empty removes what a kept container's session left in
// a directory that outlives it (its /run/secrets, its /dev/shm: mount points the
// keeper must keep), whatever its depth and locks, and the directory itself stays; a
// link at the directory's name is not followed.
func TestEmptyKeepsTheDirectory(t *testing.T) {
	base := t.TempDir()
	victim := victimDir(t, base)
	dir := filepath.Join(base, "secrets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	unix.Close(deepChain(t, dir, 300))
	for _, d := range []string{"ro", "none"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(dir, "tohost")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	for d, mode := range map[string]os.FileMode{"ro": 0o500, "none": 0, "": 0o500} {
		if err := os.Chmod(filepath.Join(dir, d), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}

	lowNofile(t, 64)
	if err := Empty(link); err == nil {
		t.Error("Empty of a link to a directory: no error")
	}
	if err := Empty(dir); err != nil {
		t.Fatalf("Empty: %.300v", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the directory after Empty: %v, %v", ents, err)
	}
	checkVictim(t, victim)
}
