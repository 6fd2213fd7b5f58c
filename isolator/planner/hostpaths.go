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
	var hostView, homeView []string
	for i, m := range ms {
		if out != nil {
			out = append(out, m)
		}
		if m.HomeRel == "" && m.Dest == home && m.Source == sandboxHome {
			continue
		}
		t := path.Clean(m.Target(home))
		below := t != home && within(t, home)
		switch {
		case m.HomeRel != "":
			homeView = append(homeView, t)
			if reaches(hostView, t) {
				c := m
				c.HomeRel, c.Dest, c.Why = "", t, m.Why+atHostPath
				repeat(i, c)
				hostView = append(hostView, t)
			}
		case below || within(home, t): // elsewhere, it reaches no path below the home
			hostView = append(hostView, t)
			if below && reaches(homeView, t) {
				c := m
				c.HomeRel, c.Dest, c.Why = strings.TrimPrefix(t, home+"/"), "", m.Why+inSandboxHome
				repeat(i, c)
				homeView = append(homeView, t)
			}
		}
	}
	if out == nil {
		return ms
	}
	return out
}

// reaches reports whether a path of view lies at, above or below p.
func reaches(view []string, p string) bool {
	for _, v := range view {
		if within(p, v) || within(v, p) {
			return true
		}
	}
	return false
}

// within is isolator.Within without its allocation (a launch asks it often here).
func within(p, dir string) bool {
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || dir == "/" || p[len(dir)] == '/')
}

// The Whys of atBothHomes' repetitions add where they are.
const (
	atHostPath    = " (at its host path)"
	inSandboxHome = " (in the sandbox home)"
)
