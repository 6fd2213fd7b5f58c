package bwrap

import (
	"fmt"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
)

// RenderEnforced renders p as Run does on a host where its limits are enforced as
// how says: "cgroup v1" (a session cgroup in the pids, memory and cpu hierarchies of
// cgroup v1, entered by the join step), "cgroup v2" (one v2 directory, cloned into)
// or "scope" (a systemd user scope holds every limit).
func RenderEnforced(p *isolator.Plan, how string) (*Spec, error) {
	var e enforcement
	var m mechanism
	o := renderOptions{ready: true, limits: &e}
	var hs []cgroup.Hierarchy
	switch how {
	case "cgroup v1":
		m = byCgroup
		for _, c := range cgroup.Controllers {
			hs = append(hs, cgroup.Hierarchy{Parent: "/sys/fs/cgroup/" + c + "/ci/job-7", Controllers: []string{c}})
		}
	case "cgroup v2":
		m = byCgroup
		hs = []cgroup.Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/ci.slice", Controllers: cgroup.Controllers}}
	case "scope":
		m = byScope
	default:
		return nil, fmt.Errorf("unknown enforcement %q", how)
	}
	if p.Limits.Pids > 0 {
		e.pids = m
	}
	if p.Limits.Memory > 0 {
		e.memory = m
	}
	if p.Limits.CPUs > 0 {
		e.cpus = m
	}
	if m == byCgroup {
		var used []cgroup.Hierarchy
		for _, h := range hs {
			if len(e.controllers(byCgroup)) > 0 && (h.V2 || contains(e.controllers(byCgroup), h.Controllers[0])) {
				used = append(used, h)
			}
		}
		o.cgroup = placement(p, e, used, cgroup.NamePrefix+p.Project.ID+"-"+sessionPlaceholder, true)
	}
	return render(p, egress.DefaultBinaries, o)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Render renders p as Run's launch does with the default binary paths, the init bound
// at InitPath and no limit placement (the pure rendering the tests compare).
func Render(p *isolator.Plan) (*Spec, error) {
	return render(p, egress.DefaultBinaries, renderOptions{ready: true})
}

// EtcEntries is etcEntries for the tests.
var EtcEntries = etcEntries

// EtcEntriesPasswd is etcEntriesPasswd for the tests.
var EtcEntriesPasswd = etcEntriesPasswd

// RenderCopying renders p as Run does when it could not open the /etc snapshot.
func RenderCopying(p *isolator.Plan) (*Spec, error) {
	return render(p, egress.DefaultBinaries, renderOptions{ready: true, noSnapshot: true})
}

// RenderInitAt renders p as Run does on a host where initAt says whether the init
// is reached in its system directory without a link or a mount crossing.
func RenderInitAt(p *isolator.Plan, initAt func(dir, init string) bool) (*Spec, error) {
	return render(p, egress.DefaultBinaries, renderOptions{ready: true, initAt: initAt})
}

// InitReachable is initReachable for the tests.
var InitReachable = initReachable

// StartEtc is startEtc for the tests: the snapshot for pp after opening it for p
// (or taking head's), and the entries take hands render.
func StartEtc(p, pp *isolator.Plan, head *EtcHead) (*etcsnap.Snapshot, []etcsnap.Entry, []string) {
	var notes []string
	o := startEtc(p, head)
	s, entries := o.take(pp, func(m string) { notes = append(notes, m) })
	return s, entries, notes
}

// RenderSnapshot renders p as Run does with the snapshot of etc open, and as it did
// when render worked the entries out itself.
func RenderSnapshot(p *isolator.Plan, etc []etcsnap.Entry) (given, worked *Spec, err error) {
	if given, err = render(p, egress.DefaultBinaries, renderOptions{ready: true, etc: etc}); err != nil {
		return nil, nil, err
	}
	worked, err = render(p, egress.DefaultBinaries, renderOptions{ready: true})
	return given, worked, err
}

// HeadSnapshot is the snapshot h opened (nil when it opened none), once it has.
func HeadSnapshot(h *EtcHead) *etcsnap.Snapshot {
	o := h.opening()
	if o == nil {
		return nil
	}
	<-o.done
	return o.snap
}

// KnownOption reports whether the mount-table read count knows bwrap's option op.
func KnownOption(op string) bool {
	_, ok := bwrapArity[op]
	return ok
}

// RecordOf is recordOf for the tests.
var RecordOf = recordOf

// RecordArgv, LaunchOf and ChildEnv are recordArgv, launchOf and childEnv for the tests.
var (
	RecordArgv = recordArgv
	LaunchOf   = launchOf
	ChildEnv   = childEnv
)
