// Package projlock is the per-project lock that closes the gap between
// `devsandbox sandboxes prune` (or `rm`) deciding a project is unused and removing
// its sandbox home and state. Prune and rm hold it exclusively from their check of
// the project's runs (a held session /tmp, a held run mark) to the end of the
// removal; every run holds it shared: the backends while they make the project's
// directories and establish its presence (the session /tmp or the run mark), the
// devsandbox command for the whole run, from before the Plan (which makes the proxy
// CA in the state directory). So a run is either seen by the check, or waits for the
// removal to finish and starts from a clean state. Runs never exclude each other, and
// prune never waits for a run: a run holding the lock is starting or going on, and
// prune keeps its project.
//
// The lock is an flock on <state root>/locks/<name>.lock, beside the projects' state
// directories (<state root>/<name>), not in them: prune removes the state directory,
// and an flock on a file that is removed and made anew excludes nothing (a run
// waiting on the old file would get it while the next takes the new one). Nothing
// removes the lock files: one empty file per project ever run. The state root is the
// user's own (0700) and never seen by a sandbox; "locks" has no dash, so no project
// is named so and `sandboxes list` does not take it for one.
package projlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/flock"
)

// Dir is the directory of the lock files in the state root.
const Dir = "locks"

// ErrInterrupted is the class of a wait that a signal ended.
var ErrInterrupted = flock.ErrInterrupted

// Path is the lock file of the project whose state directory is stateDir.
func Path(stateDir string) string {
	return filepath.Join(filepath.Dir(stateDir), Dir, filepath.Base(stateDir)+".lock")
}

// Waiting returns the waiting function (see Shared) of a run that tells w, once, that
// it waits for prune or rm to finish with the project whose state directory is stateDir.
func Waiting(w io.Writer, stateDir string) func() {
	return func() {
		fmt.Fprintf(w, "devsandbox: waiting for `devsandbox sandboxes prune` (or `rm`) to finish with %s…\n", filepath.Base(stateDir))
	}
}

// Shared takes the lock of the project whose state directory is stateDir shared and
// returns its release. When prune or rm holds it, waiting (nil: none) is called once
// and Shared waits until they are done, ctx ends (its cause is wrapped) or interrupt
// yields a value (ErrInterrupted is wrapped): never longer, and a wait that ended
// leaves nothing behind (no lock taken later, no descriptor).
func Shared[T any](ctx context.Context, stateDir string, waiting func(), interrupt <-chan T) (release func(), err error) {
	if !filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("the state directory %q is not an absolute path", stateDir)
	}
	p := Path(stateDir)
	opened, err := open(p)
	if err != nil {
		return nil, err
	}
	// One descriptor for every try of the wait (package flock): closed when the wait
	// ends without the lock.
	f, err := flock.Take(ctx, func() (*os.File, error) {
		if err := flockRetry(opened, unix.LOCK_SH|unix.LOCK_NB); err != nil {
			return nil, fmt.Errorf("locking %s: %w", p, err)
		}
		return opened, nil
	}, waiting, interrupt)
	if err != nil {
		opened.Close()
		if ctx.Err() != nil || errors.Is(err, ErrInterrupted) {
			return nil, fmt.Errorf("waiting for the lock %s: %w", p, err)
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// TryExclusive takes the lock of the project named name under the state root
// exclusively, without waiting: ok is false when a run holds it (it is starting).
func TryExclusive(stateRoot, name string) (release func(), ok bool, err error) {
	f, err := open(Path(filepath.Join(stateRoot, name)))
	if err != nil {
		return nil, false, err
	}
	err = flockRetry(f, unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return func() { f.Close() }, true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, false, nil
	default:
		f.Close()
		return nil, false, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
}

// open opens the lock file at p, made (and its directory, 0700) when missing.
func open(p string) (*os.File, error) {
	const flags = os.O_RDONLY | os.O_CREATE | unix.O_NOFOLLOW | unix.O_CLOEXEC
	f, err := os.OpenFile(p, flags, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("making the directory of project locks: %w", err)
		}
		f, err = os.OpenFile(p, flags, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the project lock: %w", err)
	}
	return f, nil
}

// flockRetry is flock(2) on f, retried when a signal interrupts it.
func flockRetry(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
