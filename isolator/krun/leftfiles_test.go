package krun

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
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

// A run waiting for the users lock while a supervisor holds it exclusively (ending its
// idle service) gives up as soon as its context ends, and holds nothing then: once the
// supervisor lets go, the lock is free.
func TestHoldUsersCancelled(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "podman", "devsandbox-runc.sock")
	supervisor := holdUsersExclusive(t, sock)
	stop := errors.New("the run was cancelled")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		f, err := holdUsers(ctx, sock, func() { cancel(stop) })
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("holdUsers: %v, want the context's cause", err)
		}
	case <-time.After(5 * time.Second): // a bound on a failure, not a sync
		t.Fatal("holdUsers did not return within 5 s of its context's end")
	}
	if err := unix.Flock(int(supervisor.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	probe, err := os.OpenFile(usersFile(sock), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the users lock is held after the run gave up: %v", err)
	}
}

// A run cancelled while it waits for the users lock fails, but not as an isolator
// that cannot run here, which mode auto would run unsandboxed.
func TestSocketCancelledWaitingForUsers(t *testing.T) {
	b := &Isolator{Settings: helper.Settings{Runtime: "runc", RuntimeDir: t.TempDir()}}
	sock := b.socketName()
	holdUsersExclusive(t, sock)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.socket(ctx, fakeHost{t: t}, nil); !errors.Is(err, context.Canceled) || isolator.IsUnavailable(err) {
		t.Errorf("socket: %v, want the run's end, not an unavailable isolator", err)
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
	lockOpened = func() {
		if !removed {
			removed = true
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() { lockOpened = nil }()
	f, err := lockCurrent(path, unix.LOCK_EX|unix.LOCK_NB)
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
	touch("devsandbox-runc-dead.sock", "devsandbox-runc-dead.sock.log", "devsandbox-runc-dead.sock.users", "devsandbox-runc-dead.sock.turn")
	// a turn alone (a run took it, and no service was started).
	touch("devsandbox-runc-turn.sock.turn")
	touch(filepath.Base(createLockPath(run, 0, sock("devsandbox-runc-dead.sock"))))
	// a log alone (users never made), and an orphan creation lock.
	touch("devsandbox-krun-logonly.sock.log", "devsandbox-create-0123456789ab.lock")
	// live: its supervisor holds the log.
	touch("devsandbox-runc-super.sock.users", "devsandbox-runc-super.sock.turn")
	lock("devsandbox-runc-super.sock.log", unix.LOCK_EX)
	// in use: a run holds the users lock (the service may be starting for it).
	touch("devsandbox-runc-used.sock.log")
	lock("devsandbox-runc-used.sock.users", unix.LOCK_SH)
	// a run's turn to decide (it may start the service).
	lock("devsandbox-runc-deciding.sock.turn", unix.LOCK_EX)
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
		"devsandbox-runc-deciding.sock.turn",
		"devsandbox-runc-listen.sock", "devsandbox-runc-listen.sock.log", "devsandbox-runc-listen.sock.users",
		"devsandbox-runc-super.sock.log", "devsandbox-runc-super.sock.turn", "devsandbox-runc-super.sock.users",
		"devsandbox-runc-used.sock.log", "devsandbox-runc-used.sock.users",
		"other.sock.log", "podman.sock",
	}
	if !slices.Equal(left, want) {
		t.Errorf("left after the sweep:\n%q\nwant\n%q", left, want)
	}
}

// A run that ends while it waits for the other creations on the service is not an
// isolator that cannot run: mode auto must not run its command unsandboxed.
func TestCreateCancelledWaitingForLock(t *testing.T) {
	b := &Isolator{Settings: helper.Settings{Runtime: "runc", RuntimeDir: t.TempDir()}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := b.create(ctx, fakeHost{t: t}, nil, nil); !errors.Is(err, context.Canceled) || isolator.IsUnavailable(err) {
		t.Errorf("create: %v, want the run's end, not an unavailable isolator", err)
	}
}

// holdUsersExclusive takes the users lock of the service at sock exclusively, as a
// supervisor stopping an idle service does; it is released when the test ends or
// the returned file is closed.
func holdUsersExclusive(t *testing.T, sock string) *os.File {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(usersFile(sock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return f
}

// A symbolic link planted at one of devsandbox's lock files in podman's runtime
// directory (a sandbox given that directory read-write can) stops the launch with an
// error that names the file, says something planted the link, and says to remove it;
// the launch does not fall back to another isolator (ErrProtection, not
// ErrUnavailable), and nothing is created where the link points.
func TestPlantedLockLink(t *testing.T) {
	rt := t.TempDir()
	dir := filepath.Join(rt, "podman")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(rt, "victim")
	b := backend(newFake(t, "krun"), t)
	b.Settings.RuntimeDir = rt
	sock := filepath.Join(dir, "devsandbox-krun.sock")
	cases := []struct {
		name string
		path string
		try  func() error
	}{
		{"creations' lock", createLockPath(rt, 0, b.socketName()), func() error {
			_, _, err := b.create(context.Background(), osHost{}, nil, nil)
			return err
		}},
		{"users lock", usersFile(sock), func() error {
			f, err := holdUsers(context.Background(), sock, nil)
			if f != nil {
				f.Close()
			}
			return err
		}},
		{"service lock", filepath.Join(dir, "devsandbox-service.lock"), func() error {
			return osHost{}.StartService(context.Background(), sock, "krun", "/usr/bin/podman")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Symlink(victim, c.path); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(c.path)
			err := c.try()
			want := "the lock file " + c.path + " is a symbolic link (too many levels of symbolic links), and devsandbox makes only regular files there: " +
				"something that can write podman's runtime directory planted it, such as a sandbox whose configuration binds that directory read-write; " +
				"remove the link (rm " + c.path + ") and run again"
			if err == nil || !strings.HasSuffix(err.Error(), want) || !errors.Is(err, isolator.ErrProtection) || errors.Is(err, isolator.ErrUnavailable) {
				t.Errorf("with a link planted at %s: %v\nwant ErrProtection ending %q", c.path, err, want)
			}
			if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the link's target was made: %v", err)
			}
		})
	}
}
