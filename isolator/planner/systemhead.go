package planner

import (
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
)

// SystemHead is the default system view (no sandbox.system_binds) worked out on
// another goroutine before Build asks for it (StartSystem; LoadDir starts one unless
// the flags or the environment name a backend other than bwrap, whose view it is,
// and hands it on when the configuration may run bwrap with it): Build uses it when the
// configuration asks for the default view with the same snapshot root, and works the
// view out itself otherwise. The view is the same one Build would make: the same
// calls on the same host paths, made earlier. On the host (a Probe from OS) the head
// asks through a stat cache that Build then shares (statCache), so a path both ask
// about is asked of the host once.
type SystemHead struct {
	pr        Probe // the head's, through stats when set
	snapshots string
	stats     *statCache    // nil unless the Probe is the host's
	ready     chan struct{} // closed once view and err are set
	done      chan struct{} // closed once then, given before the view, returned
	view      isolator.SystemView
	err       error
	// user, when set, is the host user LoadDir runs for: then gets the view with
	// the Passwd a Build with no HOME of its own gives it (guessPasswd).
	user *isolator.User

	mu     sync.Mutex
	viewed bool
	taken  bool // by a Build: the view and the cache serve one Build only
	then   func(isolator.SystemView)
	late   chan struct{} // closed when a then given after the view has run
}

// StartSystem starts working out the default system view for a user whose state
// lives in stateHome, with pr's host calls; then, when not nil, is called with the
// view on the same goroutine (where the bwrap backend starts opening its /etc
// snapshot) before Wait returns.
func StartSystem(pr Probe, stateHome string, then func(isolator.SystemView)) *SystemHead {
	return startSystem(pr, stateHome, then, nil)
}

func startSystem(pr Probe, stateHome string, then func(isolator.SystemView), user *isolator.User) *SystemHead {
	s := &SystemHead{snapshots: etcsnap.Root(stateHome), ready: make(chan struct{}), done: make(chan struct{}), then: then, user: user}
	if hostStats(pr) {
		s.stats = newStatCache(pr.Lstat, pr.Stat)
		pr.Lstat, pr.Stat = s.stats.Lstat, s.stats.Stat
	}
	s.pr = pr
	go func() {
		defer close(s.done)
		s.view, s.err = systemView(pr, nil, s.snapshots, nil)
		close(s.ready)
		s.mu.Lock()
		s.viewed = true
		f := s.then
		s.mu.Unlock()
		if s.err == nil && f != nil {
			f(s.guessPasswd(s.view))
		}
	}()
	return s
}

// guessPasswd returns v with the Passwd that Build sets (sandboxPasswd) when the
// command's HOME is the host's, for then: the bwrap backend keeps that file in its
// /etc snapshot, whose opening then starts. It is a guess, never the Plan's: a Plan
// whose HOME is another one (env.set HOME), or whose host file changed in between,
// has another Passwd, and the backend opens the snapshot of the Plan's instead.
func (s *SystemHead) guessPasswd(v isolator.SystemView) isolator.SystemView {
	if s.user != nil {
		v.Passwd = sandboxPasswd(s.pr, v, *s.user, s.user.HostHome)
	}
	return v
}

// hostStats reports whether pr's Lstat and Stat are the host's own (os.Lstat,
// os.Stat, as OS sets them): only then may a Build share the cache of a head started
// with another Probe (a test's chrooted Probe answers for another tree).
func hostStats(pr Probe) bool {
	return pr.osLinks && reflect.ValueOf(pr.Lstat).Pointer() == reflect.ValueOf(os.Lstat).Pointer() &&
		reflect.ValueOf(pr.Stat).Pointer() == reflect.ValueOf(os.Stat).Pointer()
}

// startAhead starts the system view for LoadDir unless the flags or the environment
// name another isolator than bwrap (or auto), or the host is no Linux: then it is
// nil, and such a run pays for nothing. What the files say is not known yet
// (aheadFits).
func startAhead(flags config.Flags, h config.Host, pr Probe) *SystemHead {
	maybe := func(v string) bool { return v == "" || v == "bwrap" || v == "auto" }
	if runtime.GOOS != "linux" || flags.Isolator != nil && !maybe(*flags.Isolator) || flags.Isolator == nil && !maybe(h.Vars[config.IsolatorVar]) {
		return nil
	}
	u := hostUser(h)
	return startSystem(pr, h.StateHome, nil, &u)
}

// aheadFits reports whether the loaded configuration may run bwrap with the default
// view, the one startAhead works out.
func aheadFits(cfg *config.Config) bool {
	return (cfg.Isolator == "bwrap" || cfg.Isolator == "auto") && len(cfg.Sandbox.SystemBinds) == 0
}

// Then has f called with the view once it is worked out (not at all when working it
// out failed): on the head's goroutine when the view is not done yet, else on a new
// one. Wait returns after f. Call it at most once, and before Wait; a nil head
// ignores it.
func (s *SystemHead) Then(f func(isolator.SystemView)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.viewed {
		s.then = f
		return
	}
	s.late = make(chan struct{})
	go func() {
		defer close(s.late)
		<-s.ready
		if s.err == nil {
			f(s.guessPasswd(s.view))
		}
	}()
}

// Wait waits until the view and then are done; it may be called more than once.
func (s *SystemHead) Wait() {
	if s == nil {
		return
	}
	<-s.done
	s.mu.Lock()
	late := s.late
	s.mu.Unlock()
	if late != nil {
		<-late
	}
}

// take reports whether the head's view is the one binds and snapshots ask for and
// no Build took it before: a later Build (a program that builds several Plans from
// one Loaded) asks the host again, so no answer is older than its Build's start by
// more than the head start.
func (s *SystemHead) take(binds []string, snapshots string) bool {
	if s == nil || len(binds) > 0 || s.snapshots != snapshots {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken {
		return false
	}
	s.taken = true
	return true
}

// viewNow returns the Plan's copy of the view: the head's when it is done, else one
// worked out now with the head's Probe and stat cache, rather than waiting on a
// goroutine that may not be running (the other core busy): the same calls, and
// those the head already made answered from the cache. then still gets the head's.
func (s *SystemHead) viewNow() (isolator.SystemView, error) {
	select {
	case <-s.ready:
	default:
		return systemView(s.pr, nil, s.snapshots, nil)
	}
	v := s.view
	v.Paths = slices.Clone(v.Paths) // the Plan's own, whatever then kept
	return v, s.err
}
