package bwrap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
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
//
// A Session keeps the Plan's disk reserve (Plan.Limits.DiskReserve, package
// diskguard) as Run does: Begin refuses to start under it, and while the Session
// lasts it reads the free space of the file systems the sandbox writes every
// diskguard.Interval. Once one falls under the reserve, Stopped is closed and Err
// names it; every command Command made for the project is killed at once (SIGKILL
// to bwrap, whose sandbox dies with it: --die-with-parent, the pid namespace), and
// WrapArgv and Command refuse new ones. A WrapArgv command line is the harness's to
// start and so to stop: the harness must kill it when Stopped is closed.
type Session struct {
	view  *isolator.View
	mark  *runmark.Mark
	watch *watch.Watcher
	state string
	once  sync.Once
	// low ends with the *diskguard.LowError when the reserve is breached, with
	// errEnded at End; stopGuard ends the reserve's watch.
	low       context.Context
	setLow    context.CancelCauseFunc
	stopGuard func()
	stopped   chan struct{}
	lowErr    error // set before stopped is closed
}

// errEnded ends a Session's low context at End: not a breach of the reserve.
var errEnded = errors.New("the library session ended")

// sessions holds the Sessions of this process by state directory.
var sessions = struct {
	sync.Mutex
	n map[string][]*Session
}{n: map[string][]*Session{}}

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
	guard, release, err := diskguard.For(p)
	if err == nil {
		err = guard.Check()
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("the library session did not start: %w", err)
	}
	if err := PrepareHost(p); err != nil {
		release()
		return nil, err
	}
	m, err := runmark.Hold(p.StateDir)
	if err != nil {
		release()
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
		release()
		return nil, err
	}
	s := &Session{view: v, mark: m, state: p.StateDir, watch: watch.Start(p, warn), stopped: make(chan struct{})}
	s.low, s.setLow = context.WithCancelCause(context.Background())
	s.stopGuard = release
	if guard.Reserve > 0 {
		tick := time.NewTicker(diskguard.Interval)
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			guard.Watch(wctx, tick.C, func(err error) {
				// In this order: Err reads lowErr once stopped is closed, and the
				// commands' contexts read Err once low ends.
				s.lowErr = err
				close(s.stopped)
				s.setLow(err)
			})
		}()
		s.stopGuard = func() { stop(); <-done; tick.Stop(); release() }
	}
	sessions.Lock()
	sessions.n[s.state] = append(sessions.n[s.state], s)
	sessions.Unlock()
	return s, nil
}

// Stopped is closed when a file system the session's sandbox writes has fallen under
// the Plan's disk reserve (Err says which): the harness must then kill the commands
// it started from WrapArgv command lines (Command's are killed already). It is never
// closed without a reserve.
func (s *Session) Stopped() <-chan struct{} { return s.stopped }

// Err is the *diskguard.LowError (errors.Is diskguard.ErrLow, isolator.ErrStopNow)
// once Stopped is closed, else nil.
func (s *Session) Err() error {
	select {
	case <-s.stopped:
		return s.lowErr
	default:
		return nil
	}
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
		l := slices.DeleteFunc(sessions.n[s.state], func(o *Session) bool { return o == s })
		if len(l) == 0 {
			delete(sessions.n, s.state)
		} else {
			sessions.n[s.state] = l
		}
		sessions.Unlock()
		s.stopGuard()
		s.setLow(errEnded)
		s.watch.Stop()
		s.mark.Release()
	})
}

// inSession fails when no Session of this process holds p's project: a command the
// caller runs would be unwatched (guarantee 12) and invisible to prune, which would
// remove the sandbox home and state directory under it.
// It returns the Sessions that hold it; a command is refused once one of them has
// seen the disk reserve breached.
func inSession(p *isolator.Plan) ([]*Session, error) {
	sessions.Lock()
	held := slices.Clone(sessions.n[p.StateDir])
	sessions.Unlock()
	if len(held) > 0 {
		for _, s := range held {
			if err := s.Err(); err != nil {
				return nil, fmt.Errorf("the command did not run: %w", err)
			}
		}
		// The Session's watch covers the project: its state directory is the
		// project's own.
		return held, tmpHeld(p)
	}
	return nil, fmt.Errorf("%w: no library session holds the project %s, so nothing watches what this command writes for the host's git and tools (git hooks and configs, agent and editor settings), and `devsandbox sandboxes prune` would remove its sandbox home and state while it runs; call bwrap.Begin(ctx, plan, warn) before WrapArgv or Command and the session's End after the command exits", isolator.ErrProtection, p.Project.Dir)
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

// stopOnLow makes a context for a command of the Sessions held: it ends with ctx, or
// with a Session's *diskguard.LowError when one sees the reserve breached. Nothing
// else ends it: a command's context must last as long as the command, which the
// caller waits for. What it registers is released when ctx ends or at each
// Session's End.
func stopOnLow(ctx context.Context, held []*Session) context.Context {
	var stop struct{ cancel context.CancelCauseFunc }
	var cctx context.Context
	cctx, stop.cancel = context.WithCancelCause(ctx)
	for _, s := range held {
		release := context.AfterFunc(s.low, func() {
			if err := s.Err(); err != nil {
				stop.cancel(err)
			}
		})
		context.AfterFunc(cctx, func() { release() })
	}
	return cctx
}
