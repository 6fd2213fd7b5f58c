package cgroup

import (
	"fmt"
	"io"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// Prune removes the session cgroups that runs killed with SIGKILL left beside the
// cgroup this process runs in (empty, their lock free: Sweep), saying so on w one line
// each; with dryRun it names them (Stale) and removes nothing. It needs no engine and
// no configuration; the next run that makes a session cgroup sweeps them too.
func Prune(w io.Writer, dryRun bool) {
	hs := Probe(OnHost()).Hierarchies
	verb, dirs := "removed", []string(nil)
	if dryRun {
		verb, dirs = "would remove", Stale(hs)
	} else {
		dirs = Sweep(hs)
	}
	for _, d := range dirs {
		fmt.Fprintf(w, "%s %s: the session cgroup of a run that was killed\n", verb, termsafe.Line(d))
	}
}
