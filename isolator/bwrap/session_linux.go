package bwrap

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
	"github.com/devsandbox/devsandbox/isolator/watch"
)

// Session is a harness's hold on a Plan's project for the commands it runs through
// WrapArgv and Command, which Run's own launch takes for its command: the project is
// marked in use, so `devsandbox sandboxes prune` and `rm` keep its sandbox home and
// state directory, and a watch checks what the commands write to the project's git
// metadata and tripwires. WrapArgv and Command refuse a Plan whose state directory no
// Session of this process holds. A Session may serve any number of commands, one
// after another or at once; End it once the last has exited.
type Session struct {
	view  *isolator.View
	mark  *runmark.Mark
	watch *watch.Watcher
	state string
	once  sync.Once
}

// sessions counts the Sessions of this process by state directory.
var sessions = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// Begin makes what p's mounts need on the host (PrepareHost) and marks p's project
// in use (a run mark in its state directory, package runmark), both under the
// project's lock (package projlock), so that prune either sees the session or has
// removed the project before its directories are made; then it starts the watch of
// the project (watch.Start), whose findings go to warn (nil: discarded). While prune
// or rm holds the lock, Begin waits until they are done or ctx ends.
func Begin(ctx context.Context, p *isolator.Plan, warn func(string)) (*Session, error) {
	unlock, err := projlock.Shared[struct{}](ctx, p.StateDir, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("the library session did not start: %w", err)
	}
	defer unlock()
	if err := PrepareHost(p); err != nil {
		return nil, err
	}
	m, err := runmark.Hold(p.StateDir)
	if err != nil {
		return nil, fmt.Errorf("%w: marking the project's state directory %s in use: %w", isolator.ErrProtection, p.StateDir, err)
	}
	if warn == nil {
		warn = func(string) {}
	}
	// Made before any command of the session runs: the View records the files the
	// masks and read-only binds hold, which a command may move under other names.
	v, err := isolator.ViewOf(&Isolator{}, p)
	if err != nil {
		m.Release()
		return nil, err
	}
	s := &Session{view: v, mark: m, state: p.StateDir, watch: watch.Start(p, warn)}
	sessions.Lock()
	sessions.n[s.state]++
	sessions.Unlock()
	return s, nil
}

// View is the View of the session's Plan (isolator.ViewOf with bwrap), made by Begin
// before any command of the session ran: the harness's file tools open through it
// (View.Open). It knows the host files the masks and read-only binds held then, so
// Open refuses them under any name a command moves them to later (a directory holding
// mount points can be renamed in the sandbox's mount namespace, and the mounts move
// with it); a View made with ViewOf after a command moved one does not know it.
func (s *Session) View() *isolator.View { return s.view }

// End stops the watch (its last check of what the commands wrote, which moves what
// fails to the quarantine) and releases the project's run mark: from then on prune
// may remove the project. Call it once every command of the session has exited; it
// does nothing more when called again.
func (s *Session) End() {
	s.once.Do(func() {
		sessions.Lock()
		if sessions.n[s.state]--; sessions.n[s.state] <= 0 {
			delete(sessions.n, s.state)
		}
		sessions.Unlock()
		s.watch.Stop()
		s.mark.Release()
	})
}

// inSession fails when no Session of this process holds p's project: a command the
// caller runs would be unwatched (guarantee 12) and invisible to prune, which would
// remove the sandbox home and state directory under it.
func inSession(p *isolator.Plan) error {
	sessions.Lock()
	n := sessions.n[p.StateDir]
	sessions.Unlock()
	if n > 0 {
		// The Session's watch covers the project: its state directory is the
		// project's own.
		return tmpHeld(p)
	}
	return fmt.Errorf("%w: no library session holds the project %s, so nothing watches what this command writes for the host's git and tools (git hooks and configs, agent and editor settings), and `devsandbox sandboxes prune` would remove its sandbox home and state while it runs; call bwrap.Begin(ctx, plan, warn) before WrapArgv or Command and the session's End after the command exits", isolator.ErrProtection, p.Project.Dir)
}

// tmpHeld fails when p names a session /tmp (Tmp.Session) that no lock holds:
// `sandboxes prune` removes such a dir once a minute old, whatever the run marks say,
// and the command has it bound read-write as its /tmp.
func tmpHeld(p *isolator.Plan) error {
	if p.Tmp.Kind == "tmpfs" || p.Tmp.Session == "" {
		return nil // WrapArgv and Command give the command a tmpfs
	}
	d := filepath.Join(p.Tmp.Dir, p.Tmp.Session)
	if tmpdir.Locked(d) {
		return nil
	}
	return fmt.Errorf("%w: the session /tmp %s is not held, so `devsandbox sandboxes prune` would remove it while the command runs; make it with tmpdir.Acquire(plan.Tmp.Dir) and keep that Session until the command exits, or leave Plan.Tmp.Session empty for a tmpfs /tmp", isolator.ErrProtection, d)
}
