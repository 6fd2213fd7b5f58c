package planner

import (
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// selfWritableWarning is the warning for a devsandbox installed in dir where the
// sandbox of p can write ("" when it cannot): a sandboxed program could replace
// devsandbox or a helper beside it (devsandbox-init, -bwrap-init, -proxy, -docker,
// -krun), or plant a missing one, and the next launch would run it on the host. A
// warning, not a refusal: running a build of devsandbox from its own source tree is
// how devsandbox is developed, and the user chose that binary.
func selfWritableWarning(p *isolator.Plan, dir string) string {
	m, at, ok := isolator.WritableIn(p, dir)
	if !ok {
		return ""
	}
	return fmt.Sprintf("devsandbox runs from %s, which this sandbox can write (as %s, through %s): a sandboxed program could replace devsandbox or its helpers there, and the next launch would run them outside the sandbox; install devsandbox outside the project and its read-write binds (make install, or scripts/install.sh)", dir, at, m.Why)
}
