package planner

import (
	"path"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// A path below the host home has one place in a sandbox whose home is the host home's
// path (bwrap), and two in one whose home lies elsewhere (docker.home, e.g. on macOS,
// or for a Linux user whose home is not /home/<user>): in the sandbox home, where the
// home-relative mounts land (the hide_paths masks, tool bindings), and at its host
// path, where the mounts of a host path at the same path (the project, a user's bind,
// the git dirs, the protections in them) show it. The planner orders the mounts for
// the first case, one place; atBothHomes gives the second the same view at both places.

// atBothHomes returns ms with each mount below the home repeated, right after it, at
// its other place when the mounts before it place anything there (at, above or below
// it): a home-relative mount at its host path, a mount at a host path in the sandbox
// home. The sandbox home itself places nothing in this sense: its content is the
// sandbox's own, and a host path's protection has nothing to cover there. A sandbox
// whose home is the host home finds each repetition where the mount it repeats is, and
// leaves it out (isolator.Mount.Repeats); a container finds two different places.
func atBothHomes(ms []isolator.Mount, home, sandboxHome string) []isolator.Mount {
	// out is nil until a first repetition (most plans have none): then ms up to it, on.
	var out []isolator.Mount
	repeat := func(i int, c isolator.Mount) {
		if out == nil {
			out = append(make([]isolator.Mount, 0, len(ms)+8), ms[:i+1]...)
		}
		out = append(out, c)
	}
	// The destinations (resolved against the host home) of the mounts at host paths
	// and of those in the sandbox home, placed so far.
	hostView, homeView := newPathSet(), newPathSet()
	for i, m := range ms {
		if out != nil {
			out = append(out, m)
		}
		if m.HomeRel == "" && m.Dest == home && m.Source == sandboxHome {
			continue
		}
		t := path.Clean(m.Target(home))
		below := t != home && isolator.Within(t, home)
		switch {
		case m.HomeRel != "":
			homeView.add(t)
			if hostView.reaches(t) {
				c := m
				c.HomeRel, c.Dest, c.Why = "", t, m.Why+atHostPath
				repeat(i, c)
				hostView.add(t)
			}
		case below || isolator.Within(home, t): // elsewhere, it reaches no path below the home
			hostView.add(t)
			if below && homeView.reaches(t) {
				c := m
				c.HomeRel, c.Dest, c.Why = strings.TrimPrefix(t, home+"/"), "", m.Why+inSandboxHome
				repeat(i, c)
				homeView.add(t)
			}
		}
	}
	if out == nil {
		return ms
	}
	return out
}

// pathSet is a set of absolute clean paths that answers, in a few map lookups per
// level of a path, whether one lies at, above or below a path.
type pathSet struct {
	at    map[string]bool // the paths
	above map[string]bool // every directory holding one
}

func newPathSet() pathSet { return pathSet{at: map[string]bool{}, above: map[string]bool{}} }

func (s pathSet) add(p string) {
	s.at[p] = true
	for d := path.Dir(p); !s.above[d]; d = path.Dir(d) {
		s.above[d] = true
		if d == "/" {
			break
		}
	}
}

// reaches reports whether a path of s lies at, above or below p.
func (s pathSet) reaches(p string) bool {
	if s.above[p] {
		return true
	}
	for d := p; ; d = path.Dir(d) {
		if s.at[d] {
			return true
		}
		if d == "/" {
			return false
		}
	}
}

// The Whys of atBothHomes' repetitions add where they are.
const (
	atHostPath    = " (at its host path)"
	inSandboxHome = " (in the sandbox home)"
)
