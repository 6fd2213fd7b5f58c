package krun

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A waiter whose lock file is removed while it waits takes the new file's: it never
// holds a lock that later takers do not ask.
func TestLockFileFollowsRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podman", "devsandbox-create-x.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	got := make(chan func(), 1)
	go func() {
		u, err := lockFile(context.Background(), path, func() { close(waiting) })
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	// Once the waiter found the lock held, remove the file while holding it, as
	// removeLocked does, then release it: the waiter must end up with the lock of the
	// file at the path (made anew), not the removed one's.
	<-waiting
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	if u == nil {
		t.FailNow()
	}
	defer u()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the waiter holds no file at the path: %v", err)
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		t.Error("the lock at the path is free while the waiter says it holds it")
	}
}

// A try that locks a file removed between its open and its flock (the holder removed
// it and let go meanwhile) takes the file at the path instead.
func TestLockCurrentRemovedBeforeLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var removed bool
	f, err := lockCurrentOpened(path, unix.LOCK_EX|unix.LOCK_NB, func() {
		if !removed {
			removed = true
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !sameFile(f, path) {
		t.Fatal("the lock taken is not the file's at the path")
	}
}

// The sweep removes the sets of services that are gone and only those: not one whose
// supervisor holds its log, one a run uses, or one that listens; free creation locks
// go, a held one stays.
func TestSweepSets(t *testing.T) {
	run := t.TempDir()
	dir := filepath.Join(run, "podman")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	touch := func(names ...string) {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	lock := func(n string, how int) {
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	sock := func(n string) string { return filepath.Join(dir, n) }
	// gone: a dead service's files, its stale socket and its creation lock.
	touch("devsandbox-runc-dead.sock", "devsandbox-runc-dead.sock.log", "devsandbox-runc-dead.sock.users")
	touch(filepath.Base(createLockPath(run, 0, sock("devsandbox-runc-dead.sock"))))
	// a log alone (users never made), and an orphan creation lock.
	touch("devsandbox-krun-logonly.sock.log", "devsandbox-create-0123456789ab.lock")
	// live: its supervisor holds the log.
	touch("devsandbox-runc-super.sock.users")
	lock("devsandbox-runc-super.sock.log", unix.LOCK_EX)
	// in use: a run holds the users lock (the service may be starting for it).
	touch("devsandbox-runc-used.sock.log")
	lock("devsandbox-runc-used.sock.users", unix.LOCK_SH)
	// listening.
	touch("devsandbox-runc-listen.sock.log", "devsandbox-runc-listen.sock.users")
	l, err := net.Listen("unix", sock("devsandbox-runc-listen.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// a creation under way, and files not devsandbox's.
	lock("devsandbox-create-busy00000000.lock", unix.LOCK_EX)
	touch("podman.sock", "other.sock.log")

	sweepSets(dir, osHost{}.Listening)

	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range es {
		left = append(left, e.Name())
	}
	want := []string{
		"devsandbox-create-busy00000000.lock",
		"devsandbox-runc-listen.sock", "devsandbox-runc-listen.sock.log", "devsandbox-runc-listen.sock.users",
		"devsandbox-runc-super.sock.log", "devsandbox-runc-super.sock.users",
		"devsandbox-runc-used.sock.log", "devsandbox-runc-used.sock.users",
		"other.sock.log", "podman.sock",
	}
	if !slices.Equal(left, want) {
		t.Errorf("left after the sweep:\n%q\nwant\n%q", left, want)
	}
}
