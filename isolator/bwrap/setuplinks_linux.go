package bwrap

import (
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// setupLinksFixed is the first bubblewrap that creates mount points under the new
// root without following a symlink out of it (openat2 with RESOLVE_IN_ROOT):
// CVE-2026-87766, GHSA-pxhw-h44j-8pfx.
var setupLinksFixed = [3]int{0, 12, 0}

// setupLinksRow is doctor's row on CVE-2026-87766 for the bwrap that says version:
// a warning, never a failure, before 0.12 (Debian 12 ships 0.8.0, Ubuntu 24.04 0.9.0),
// saying what devsandbox checks itself and what remains.
func setupLinksRow(version string) isolator.Check {
	const name = "bwrap mount points (CVE-2026-87766)"
	got, ok := parseVersion(version)
	if ok && !versionLess(got, setupLinksFixed) {
		return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active},
			Detail: fmt.Sprintf("bubblewrap %d.%d.%d creates mount points without following links out of the sandbox", got[0], got[1], got[2])}
	}
	which := "an unknown bubblewrap version"
	if ok {
		which = fmt.Sprintf("bubblewrap %d.%d.%d", got[0], got[1], got[2])
	}
	return isolator.Check{Name: name, Status: isolator.Status{
		State: isolator.Warning,
		Reason: which + " follows symlinks when it creates mount points during setup (fixed in 0.12). " +
			"devsandbox refuses to launch when a mount destination is reached through a symlink in a host directory the sandbox can write " +
			"(project, sandbox home, rw binds, tool directories); not covered: a session running at the same time (of the same project, " +
			"or sharing an rw bind) can swap a directory for a link between that check and bwrap's setup, and so have bwrap create " +
			"empty directories and files, or empty an existing file, at host paths of its choosing that you can write",
		Fix: "install bubblewrap 0.12 or later (0.13 also drops bwrap's mount-table scan per bind, which makes launches faster); " +
			"until then, start no session of a project while an untrusted one of it runs",
	}}
}
