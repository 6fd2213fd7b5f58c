package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
)

// pruneFixture is a project unused for 60 days, with its sandbox home and state
// directory on disk, and a removal that does what devsandbox-docker's does to them.
type pruneFixture struct {
	stateRoot, state, home string
	sb                     dockerhelper.Sandbox
}

func newPruneFixture(t *testing.T) *pruneFixture {
	t.Helper()
	root := t.TempDir()
	f := &pruneFixture{stateRoot: filepath.Join(root, "state", "devsandbox")}
	const name = "app-0123abcd"
	f.state = filepath.Join(f.stateRoot, name)
	f.home = filepath.Join(root, "data", "devsandbox", name, "home")
	for _, d := range []string{f.state, f.home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.sb = dockerhelper.Sandbox{Name: name, Home: filepath.Dir(f.home), State: f.state, LastUsed: time.Now().Add(-60 * 24 * time.Hour)}
	return f
}

// remove removes what prune takes for unused, as devsandbox-docker's Prune does.
func (f *pruneFixture) remove(t *testing.T) func([]dockerhelper.Sandbox, []string) error {
	return func(idle []dockerhelper.Sandbox, _ []string) error {
		for _, sb := range idle {
			if dockerhelper.Prunable(sb, time.Now(), 30*24*time.Hour) == "" {
				continue
			}
			for _, d := range []string{sb.Home, sb.State} {
				if err := os.RemoveAll(d); err != nil {
					t.Error(err)
				}
			}
		}
		return nil
	}
}

// startRun is what a bwrap run does before its sandbox starts (bwrap's prepare): under
// the project's lock, it makes the sandbox home and takes its session /tmp in the
// state directory.
func (f *pruneFixture) startRun(waiting func()) (*tmpdir.Session, error) {
	unlock, err := projlock.Shared[struct{}](context.Background(), f.state, waiting, nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := os.MkdirAll(f.home, 0o700); err != nil {
		return nil, err
	}
	return tmpdir.Acquire(filepath.Join(f.state, "tmp"))
}

// TestPruneRaceWithStartingRun is the attack on prune's check-then-remove gap: a run
// starts after prune found the project unused and before it removed it. The run must
// come out with its sandbox home and session /tmp in place, seen by the next prune,
// not running in a half-removed sandbox.
func TestPruneRaceWithStartingRun(t *testing.T) {
	f := newPruneFixture(t)
	type result struct {
		sess *tmpdir.Session
		err  error
	}
	ran := make(chan result, 1)
	waited := false
	afterPruneCheck = func() {
		waiting := make(chan struct{})
		go func() {
			s, err := f.startRun(func() { close(waiting) })
			ran <- result{s, err}
		}()
		// Either the run waits for prune (the fix), or it started in the gap.
		select {
		case <-waiting:
			waited = true
		case r := <-ran:
			ran <- r
		}
	}
	defer func() { afterPruneCheck = nil }()
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &out}
	removed := false
	remove := f.remove(t)
	err := a.pruneIdle(f.stateRoot, []dockerhelper.Sandbox{f.sb}, 30*24*time.Hour, false, func(idle []dockerhelper.Sandbox, busy []string) error {
		removed = len(idle) == 1
		return remove(idle, busy)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !removed {
		t.Fatalf("prune kept the unused project (its check saw a run before there was one); output:\n%s", out.String())
	}
	r := <-ran
	if r.err != nil {
		t.Fatalf("the run failed: %v", r.err)
	}
	defer r.sess.Release()
	if !waited {
		t.Error("the run did not wait for prune's removal")
	}
	for _, d := range []string{r.sess.Path, f.home} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("prune removed %s of a run that is going on: %v", d, err)
		}
	}
	if !runGoingOn(f.state) {
		t.Error("the next prune would not see the run")
	}
}

// TestPruneKeepsStartingRun: a run holding the project's lock (between its start and
// its session /tmp) is starting; prune keeps the project without waiting for it.
func TestPruneKeepsStartingRun(t *testing.T) {
	f := newPruneFixture(t)
	unlock, err := projlock.Shared[struct{}](context.Background(), f.state, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &out}
	err = a.pruneIdle(f.stateRoot, []dockerhelper.Sandbox{f.sb}, 30*24*time.Hour, false, func(idle []dockerhelper.Sandbox, busy []string) error {
		if len(idle) != 0 || len(busy) != 1 || busy[0] != f.sb.Name {
			t.Errorf("idle %v, busy %v; want the project busy", idle, busy)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "kept app-0123abcd (unused for 60 days): a run of it is going on\n"; out.String() != want {
		t.Errorf("prune said %q, want %q", out.String(), want)
	}
}

// TestSandboxesRmRefusesRunning: rm of a sandbox a run holds, or is starting in,
// removes nothing and says why.
func TestSandboxesRmRefusesRunning(t *testing.T) {
	f := newPruneFixture(t)
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	calls := 0
	remove := func() error { calls++; return nil }
	sess, err := f.startRun(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.removeIdle(f.stateRoot, f.sb, remove); !errors.Is(err, errInUse) {
		t.Errorf("rm of a running sandbox: %v, want errInUse", err)
	}
	sess.Release()
	unlock, err := projlock.Shared[struct{}](context.Background(), f.state, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.removeIdle(f.stateRoot, f.sb, remove); !errors.Is(err, errInUse) {
		t.Errorf("rm of a starting sandbox: %v, want errInUse", err)
	}
	unlock()
	if calls != 0 {
		t.Fatalf("rm removed a sandbox in use")
	}
	if err := a.removeIdle(f.stateRoot, f.sb, remove); err != nil || calls != 1 {
		t.Errorf("rm of an idle sandbox: %v, %d removals; want it removed", err, calls)
	}
}

// TestPruneTmpEscapesProjectNames: prune names each session /tmp it removes by its
// path, which holds the project's directory name (its state directory is
// <basename>-<id>); a name holds any byte but '/', so one with an escape sequence in
// it (OSC 52 sets the clipboard) must show as its escapes. Before, it was printed raw.
func TestPruneTmpEscapesProjectNames(t *testing.T) {
	root := t.TempDir()
	session := filepath.Join(root, "a\x1b]52;c;b3duZWQ=\a-0123abcd", "tmp", "s1")
	if err := os.MkdirAll(session, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-tmpdir.PruneAge - time.Hour)
	if err := os.Chtimes(session, old, old); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &out}
	a.pruneTmp(root, true)
	want := "would remove " + root + `/a\x1b]52;c;b3duZWQ=\x07-0123abcd/tmp/s1: the session /tmp of a run that ended without removing it` + "\n"
	if out.String() != want {
		t.Errorf("prune said %q\nwant %q", out.String(), want)
	}
}
