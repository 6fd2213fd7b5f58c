// Package runmark marks a project as in use for the life of a run whose sandbox /tmp
// is not a session dir in the project's state directory (package tmpdir): krun and
// docker runs, and bwrap runs with /tmp in memory. A mark is a file in the state
// directory's runs/ that its run holds an flock on; it is made under a dot-name and
// locked before it is renamed into place, so a mark that can be seen without its lock
// is a dead run's, and Held asks every one without disturbing a starting run.
package runmark

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/projlock"
)

// Dir is the directory of the marks in a project's state directory.
const Dir = "runs"

// pendingAge is how long a mark still under its dot-name counts: it is renamed
// microseconds after it is made, so an older one is a run's that died meanwhile.
const pendingAge = time.Minute

// Mark is a run's mark.
type Mark struct {
	Name string // base name in Dir
	f    *os.File
}

// Hold makes and locks a mark in stateDir (made 0700 if missing). Marks of dead runs
// that it finds there are removed.
func Hold(stateDir string) (*Mark, error) {
	if !filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("the state directory %q is not an absolute path", stateDir)
	}
	dir := filepath.Join(stateDir, Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the directory of run marks: %w", err)
	}
	f, err := os.CreateTemp(dir, ".run-*") // O_EXCL, 0600, O_CLOEXEC
	if err != nil {
		return nil, fmt.Errorf("making a run mark: %w", err)
	}
	pending := f.Name()
	name := strings.TrimPrefix(filepath.Base(pending), ".")
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		err = os.Rename(pending, filepath.Join(dir, name))
	}
	if err != nil {
		f.Close()
		os.Remove(pending)
		return nil, fmt.Errorf("holding the run mark %s: %w", pending, err)
	}
	m := &Mark{Name: name, f: f}
	sweep(dir, name)
	return m, nil
}

// HoldShared is Hold under the project's lock (projlock.Shared, which see for waiting
// and interrupt): `sandboxes prune` either sees the mark or has removed the project
// before it is made.
func HoldShared[T any](ctx context.Context, stateDir string, waiting func(), interrupt <-chan T) (*Mark, error) {
	unlock, err := projlock.Shared(ctx, stateDir, waiting, interrupt)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return Hold(stateDir)
}

// Path is the mark's file, which its run holds locked until Release.
func (m *Mark) Path() string { return filepath.Join(filepath.Dir(m.f.Name()), m.Name) }

// Dead reports whether the run whose mark is the file at path (a Path) has ended:
// the mark is gone, or no run holds its lock. False when that cannot be told (path
// is not a mark's, or the mark cannot be opened).
func Dead(path string) bool {
	if !filepath.IsAbs(path) || filepath.Base(filepath.Dir(path)) != Dir || !strings.HasPrefix(filepath.Base(path), "run-") {
		return false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return errors.Is(err, unix.ENOENT) // removed: its run released it, or it was swept as a dead run's
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	return unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) == nil
}

// Where identifies where a mark's path (Path) names the mark: this boot of this
// machine's kernel and this mount namespace. A process elsewhere (another machine
// or container sharing a podman service) may find nothing at the path, or another
// file, and must not take the run for dead (Dead). "" when it cannot be told.
func Where() string {
	boot := pin.BootID()
	var st unix.Stat_t
	if boot == "" || unix.Stat("/proc/self/ns/mnt", &st) != nil {
		return ""
	}
	return fmt.Sprintf("%s/mnt:%d:%d", boot, st.Dev, st.Ino)
}

// Release removes the mark and drops its lock.
func (m *Mark) Release() {
	_ = os.Remove(filepath.Join(filepath.Dir(m.f.Name()), m.Name))
	m.f.Close()
}

// Held reports whether a run other than the one holding the mark named own ("":
// none) holds a mark in stateDir, or is making one.
func Held(stateDir, own string, now time.Time) bool {
	dir := filepath.Join(stateDir, Dir)
	held := false
	_ = dirent.ReadDir(dir, 1024, func(name string, typ byte) bool {
		switch {
		case name == own || (typ != unix.DT_REG && typ != unix.DT_UNKNOWN):
		case strings.HasPrefix(name, ".run-"):
			age, ok := ageOf(filepath.Join(dir, name), now)
			held = ok && age < pendingAge
		case strings.HasPrefix(name, "run-"):
			held = locked(filepath.Join(dir, name))
		}
		return !held
	})
	return held
}

// locked reports whether a run holds the mark at p: its lock cannot be shared.
func locked(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false // gone meanwhile: its run ended
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) != nil
}

// ageOf is how long ago the file at p was last modified; false when it is gone.
func ageOf(p string, now time.Time) (time.Duration, bool) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return 0, false
	}
	return now.Sub(time.Unix(st.Mtim.Unix())), true
}

// sweep removes the marks in dir of runs that died (no lock), but own, and pending
// ones over pendingAge old.
func sweep(dir, own string) {
	now := time.Now()
	_ = dirent.ReadDir(dir, 1024, func(name string, typ byte) bool {
		p := filepath.Join(dir, name)
		switch {
		case name == own:
		case strings.HasPrefix(name, ".run-"):
			if age, ok := ageOf(p, now); ok && age >= pendingAge {
				_ = os.Remove(p)
			}
		case strings.HasPrefix(name, "run-"):
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			if err != nil {
				return true
			}
			// Removed while locked: a run that made it cannot be holding it.
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
				_ = os.Remove(p)
			}
			unix.Close(fd)
		}
		return true
	})
}
