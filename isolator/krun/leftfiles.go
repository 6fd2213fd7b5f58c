package krun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/flock"
	"github.com/devsandbox/devsandbox/isolator"
)

// The files devsandbox keeps beside the sockets of the podman services it starts, in
// podman's runtime directory: per socket SOCK (one per runtime and storage key, see
// serviceKey) SOCK.log (the service's output), SOCK.users (its users' lock, see
// Supervise), SOCK.turn (the runs' turn to decide about the service, see socket) and
// devsandbox-create-HASH.lock (the creations' turn, see create); and
// devsandbox-service.lock, one for all. A supervisor removes its socket's set when it
// ends its idle service; a set whose supervisor died (kill -9) goes at the next start of
// any service in the directory (sweepSets).
//
// A lock file may be removed only by a process that holds it exclusively, and everyone
// who takes a lock checks, once they have it, that the path still names the file they
// locked (lockCurrent), else takes the new one: a waiter that got the lock of a removed
// file would hold a lock no one else asks. A supervisor holds a lock on its log (the
// open file it shares with podman) for its life, so a set whose log is locked is a live
// service's.

// takeLock takes the flock how (unix.LOCK_EX, unix.LOCK_SH) on the lock file at path,
// making it and its directory when missing. While another process holds it, waiting
// (nil: none) is called once and the wait is package flock's: it ends with ctx, and
// then nothing of it holds the lock or takes it later. Each try locks the file the
// path names then (lockCurrent): it may be removed while free.
func takeLock(ctx context.Context, path string, how int, waiting func()) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return flock.Take[struct{}](ctx, func() (*os.File, error) {
		f, err := lockCurrent(path, how|unix.LOCK_NB)
		if errors.Is(err, isolator.ErrProtection) {
			return nil, err // names the file already
		}
		if err != nil {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		return f, nil
	}, waiting, nil)
}

// lockOpened, set by tests only, is called between each open of lockCurrent and its
// flock.
var lockOpened func()

// lockCurrent opens path (made 0600 when missing) and takes the flock how on it, once
// the path names the file locked. A symbolic link at path is not followed: the error
// is plantedLock's.
func lockCurrent(path string, how int) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, plantedLock(path, err)
		}
		if lockOpened != nil {
			lockOpened()
		}
		if err := unix.Flock(int(f.Fd()), how); err != nil {
			f.Close()
			return nil, err
		}
		if sameFile(f, path) {
			return f, nil
		}
		f.Close() // removed before we had it locked: the lock is the new file's
	}
}

// plantedLock is the error for err, opening the lock file path: when a symbolic link
// is there (O_NOFOLLOW's ELOOP), the launch stops (isolator.ErrProtection, never a
// fall back to another isolator) saying which file, that something planted the link
// (devsandbox makes only regular files there) and the fix; else err.
func plantedLock(path string, err error) error {
	if !errors.Is(err, unix.ELOOP) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
		return err
	}
	return fmt.Errorf("%w: the lock file %s is a symbolic link (%w), and devsandbox makes only regular files there: something that can write podman's runtime directory planted it, such as a sandbox whose configuration binds that directory read-write; remove the link (rm %s) and run again", isolator.ErrProtection, path, unix.ELOOP, path)
}

// sameFile reports whether path names the file f is open on.
func sameFile(f *os.File, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Lstat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// removeLocked removes the lock file at path if no one holds it: it takes the lock
// exclusively first (see above). False when it is held or cannot be removed.
func removeLocked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil || !sameFile(f, path) {
		return false
	}
	return os.Remove(path) == nil
}

// removeSet removes the files of the service on sock but its users lock, which the
// caller holds exclusively (f) and removes last; the service is gone.
func removeSet(sock string, users *os.File) {
	_ = os.Remove(sock) // a socket nothing listens on
	removeLocked(createLockPath(filepath.Dir(filepath.Dir(sock)), 0, sock))
	removeLocked(turnFile(sock)) // a run that holds it finds no service and starts one
	_ = os.Remove(serviceLog(sock))
	if sameFile(users, usersFile(sock)) {
		_ = os.Remove(usersFile(sock))
	}
}

// sweepSets removes, in the runtime directory dir (…/podman), the sets of services
// that are gone: no supervisor holds the log, no run holds the users lock, nothing
// listens on the socket. It runs under devsandbox-service.lock, so no service of
// devsandbox's is starting meanwhile. Free creation locks go too (their set may be
// gone, or a krun.podman_socket's: removing a free one is safe, see above).
func sweepSets(dir string, listening func(string) bool) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	socks := map[string]bool{}
	for _, e := range es {
		n := e.Name()
		switch {
		case !strings.HasPrefix(n, "devsandbox-"):
		case strings.HasPrefix(n, "devsandbox-create-") && strings.HasSuffix(n, ".lock"):
			removeLocked(filepath.Join(dir, n))
		case strings.HasSuffix(n, ".sock"), strings.HasSuffix(n, ".sock.log"), strings.HasSuffix(n, ".sock.users"), strings.HasSuffix(n, ".sock.turn"):
			socks[filepath.Join(dir, n[:strings.Index(n, ".sock")+len(".sock")])] = true
		}
	}
	for sock := range socks {
		sweepSet(sock, listening)
	}
}

// sweepSet removes the set of sock if its service is gone (see sweepSets).
func sweepSet(sock string, listening func(string) bool) {
	if log, err := os.OpenFile(serviceLog(sock), os.O_RDONLY|unix.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0); err == nil {
		held := unix.Flock(int(log.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil
		log.Close()
		if held {
			return // its supervisor lives
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return
	}
	users, err := os.OpenFile(usersFile(sock), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return
	}
	defer users.Close()
	if unix.Flock(int(users.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil || !sameFile(users, usersFile(sock)) || listening(sock) {
		return
	}
	removeSet(sock, users)
}
