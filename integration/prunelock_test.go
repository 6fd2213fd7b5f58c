//go:build integration

package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPruneLockHoldsRunBack, on every isolator: while `sandboxes prune` (or rm) holds
// a project's lock (<state root>/locks/<name>.lock, taken here as prune takes it), a
// run of the project says it waits, makes nothing of the project, and starts once the
// lock is free; a run waiting so ends with ^C (SIGINT) without running the command.
func TestPruneLockHoldsRunBack(t *testing.T) {
	forEachIsolatorOf(t, withoutRemote(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		env := baseEnv(embedXDG(p.root)...)
		if iso == "krun" {
			env = append(env, "XDG_RUNTIME_DIR="+runtimeDir(), "CONTAINERS_STORAGE_CONF="+userStorageConf(t))
		}
		lockRel := filepath.Join("state", "devsandbox", "locks", p.name()+".lock")
		p.write(lockRel, "")
		state := p.path(filepath.Join("state", "devsandbox", p.name()))
		home := p.path(filepath.Join("data", "devsandbox", p.name()))
		lock := func() func() {
			f, err := os.Open(p.path(lockRel))
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}
		const waiting = "devsandbox: waiting for `devsandbox sandboxes prune` (or `rm`) to finish with " + "%s"
		want := strings.Replace(waiting, "%s", p.name(), 1)

		// Cancelled while it waits.
		unlock := lock()
		cmd := command(context.Background(), p.dir, env, "--isolator="+iso, "--", "/bin/sh", "-c", "echo started")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := startLines(t, cmd)
		errs := newLineReader(t, stderr)
		errs.waitFor(want)
		for _, d := range []string{state, home} {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the waiting %s run made %s (%v)", iso, d, err)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if iso == "bwrap" {
			// The bwrap run catches ^C (to forward it): the wait ends, and says so.
			// The others end with it.
			errs.waitFor("devsandbox: the command did not run: waiting for the lock")
		}
		for l := range out.lines {
			t.Errorf("the %s run interrupted while it waited printed %q", iso, l)
		}
		if err := cmd.Wait(); err == nil {
			t.Errorf("the %s run interrupted while it waited exited 0", iso)
		}
		unlock()

		// Held back, then run.
		unlock = lock()
		cmd = command(context.Background(), p.dir, env, "--isolator="+iso, "--", "/bin/sh", "-c", "echo started")
		if stderr, err = cmd.StderrPipe(); err != nil {
			t.Fatal(err)
		}
		out = startLines(t, cmd)
		errs = newLineReader(t, stderr)
		errs.waitFor(want)
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the waiting %s run made %s (%v)", iso, state, err)
		}
		unlock()
		out.waitFor("started")
		if err := cmd.Wait(); err != nil {
			t.Errorf("the %s run after prune: %v", iso, err)
		}
	})
}
