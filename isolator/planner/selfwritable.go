package planner

import (
	"fmt"
	"path/filepath"

	"github.com/devsandbox/devsandbox/isolator"
)

// writableIn returns the bind through which the sandbox of p can write the host
// directory dir, and where dir lies in the sandbox: a read-write bind holds it and no
// later mount covers that place (a read-only bind, a mask). ok is false when none
// does.
func writableIn(p *isolator.Plan, dir string) (m isolator.Mount, at string, ok bool) {
	home := p.User.HostHome
	for _, b := range p.Mounts {
		if b.Kind != isolator.Bind || b.ReadOnly || !isolator.Within(dir, b.Source) {
			continue
		}
		rel, err := filepath.Rel(b.Source, dir)
		if err != nil {
			continue
		}
		dst := filepath.Join(b.Target(home), rel)
		last := -1
		for i, c := range p.Mounts {
			if isolator.Within(dst, c.Target(home)) {
				last = i
			}
		}
		if c := p.Mounts[last]; c.Kind == isolator.Bind && !c.ReadOnly {
			return c, dst, true
		}
	}
	return isolator.Mount{}, "", false
}

// selfWritableWarning is the warning for a devsandbox installed in dir where the
// sandbox of p can write ("" when it cannot): a sandboxed program could replace
// devsandbox or a helper beside it (devsandbox-init, -bwrap-init, -proxy, -docker,
// -krun), or plant a missing one, and the next launch would run it on the host. A
// warning, not a refusal: running a build of devsandbox from its own source tree is
// how devsandbox is developed, and the user chose that binary.
func selfWritableWarning(p *isolator.Plan, dir string) string {
	m, at, ok := writableIn(p, dir)
	if !ok {
		return ""
	}
	return fmt.Sprintf("devsandbox runs from %s, which this sandbox can write (as %s, through %s): a sandboxed program could replace devsandbox or its helpers there, and the next launch would run them outside the sandbox; install devsandbox outside the project and its read-write binds (make install, or scripts/install.sh)", dir, at, m.Why)
}
