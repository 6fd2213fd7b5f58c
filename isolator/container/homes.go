package container

import (
	"fmt"
	"path"

	"github.com/devsandbox/devsandbox/isolator"
)

// homesApart refuses a containers' home strictly above or below the host home while p
// shows something at a host path at, above or below the host home: a Bind or Data
// there (the project, a user's bind, a tool's binding at its host path; a mask or a
// tmpfs shows nothing). A path below the host home is at
// two places in a container whose home is elsewhere (the planner's atBothHomes gives
// both the same view); with one home inside the other those places nest, and a mask
// at one is shown, or covered, through the other. config refuses such a docker.home
// when it loads; a library caller builds its own Plan and Options, which did not pass
// there, so the layout checks again. A home at the host home's path, or apart from it,
// is fine, and so is any home when p shows nothing there.
func homesApart(p *isolator.Plan, home string) error {
	host, h := path.Clean(p.User.HostHome), path.Clean(home)
	var where string
	switch {
	case h == host:
		return nil
	case isolator.Within(host, h):
		where = "contains"
	case isolator.Within(h, host):
		where = "lies inside"
	default:
		return nil
	}
	for _, m := range p.Mounts {
		if m.Kind != isolator.Bind && m.Kind != isolator.Data || m.HomeRel != "" || m.Dest == p.User.HostHome && m.Source == p.SandboxHome {
			continue // shows nothing, or in the containers' home: not at a host path
		}
		if t := path.Clean(m.Dest); isolator.Within(t, host) || isolator.Within(host, t) {
			return fmt.Errorf("%w: the containers' home %s %s the host home %s, where the sandbox shows %s (%s) at its host path: "+
				"a path below the host home would be at two places inside one another; set docker.home to %s, or to a path neither above nor below it",
				isolator.ErrConfig, h, where, host, t, m.Why, host)
		}
	}
	return nil
}
