package planner

import (
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// toolShare is the work on the host's tools that one launch's --config check
// (configWritable), its ToolKeys and its Build share (issue 18): the stat cache their
// probes ask through, the commands found on PATH, and the tools' detection and
// bindings (a tools.Memo: Tool.DetectOn, Tool.BindingsOn; bindings per ssh
// ProxyCommand, so the check and Build see the same ones only when they ask with
// the same, which sshProxyCommand makes them do), and the links resolved through
// that cache (evalCache). LoadDir makes one per launch and
// carries it on the Probe. It serves one Build only (take), as the system view
// ahead does: a later Build from the same Probe asks the host again.
//
// Everything kept was asked of the host within the launch, before Build; as with
// statCache, what the sandbox is given is still checked when it is opened and
// watched while it runs.
type toolShare struct {
	home, dir string
	vars      map[string]string
	stats     *statCache // nil unless the Probe is the host's
	memo      *tools.Memo

	// eval resolves links through stats for the check and then Build (never at
	// once: the check runs within LoadDir, before Build can be called); made by the
	// first withStats.
	eval       *evalCache
	listedOnce sync.Once

	mu    sync.Mutex
	seen  map[string]foundCommand // ToolHost's LookPath answers
	taken atomic.Bool
}

// foundCommand is a LookPath answer.
type foundCommand struct {
	path string
	ok   bool
}

// newToolShare returns the share for the launch in project dir of the user of h,
// whose probe is pr. Its stat cache is head's when the system view is being worked
// out ahead (so Build, which takes that view's cache, asks through the same one).
func newToolShare(h config.Host, pr Probe, dir string, head *SystemHead) *toolShare {
	s := &toolShare{home: h.Home, dir: dir, vars: h.Vars, memo: tools.NewMemo(), seen: map[string]foundCommand{}}
	switch {
	case head != nil && head.stats != nil:
		s.stats = head.stats
	case hostStats(pr):
		s.stats = newStatCache(pr.Lstat, pr.Stat)
	}
	return s
}

// fits reports whether s was made for the host h and project dir: a Build or check
// of another user, environment or project does not use it.
func (s *toolShare) fits(h config.Host, dir string) bool {
	return s != nil && s.home == h.Home && s.dir == dir && maps.Equal(s.vars, h.Vars)
}

// take hands s to one Build: nil after the first.
func (s *toolShare) take() *toolShare {
	if s == nil || !s.taken.CompareAndSwap(false, true) {
		return nil
	}
	return s
}

// lookPath returns name's LookPath answer, working it out with find the first time.
func (s *toolShare) lookPath(name string, find func() foundCommand) foundCommand {
	s.mu.Lock()
	f, ok := s.seen[name]
	s.mu.Unlock()
	if ok {
		return f
	}
	f = find()
	s.mu.Lock()
	s.seen[name] = f
	s.mu.Unlock()
	return f
}

// dirOf is the project s was made for ("" for nil).
func (s *toolShare) dirOf() string {
	if s == nil {
		return ""
	}
	return s.dir
}

// statsFor is s's stat cache for a probe of the host h in project dir; nil when s
// has none or was made for another.
func (s *toolShare) statsFor(h config.Host, dir string) *statCache {
	if !s.fits(h, dir) || s.taken.Load() {
		return nil
	}
	return s.stats
}

// withStats is withStats for the check and Build of s's launch: pr (the host's)
// asking through s's stat cache and resolving links with s's evalCache, so what
// the check resolved Build does not resolve again.
func (s *toolShare) withStats(pr Probe, h config.Host) Probe {
	s.listedOnce.Do(func() {
		s.stats.listDirs(listNames, h.Home, h.ConfigHome, h.DataHome)
		s.stats.listDirs(listNames, filepath.SplitList(h.Vars["PATH"])...)
		s.eval = newEvalCache(s.stats.Lstat, pr.Readlink, pr.EvalSymlinks)
	})
	pr.Lstat, pr.Stat = s.stats.Lstat, s.stats.Stat
	pr.EvalSymlinks = s.eval.eval
	return pr
}
