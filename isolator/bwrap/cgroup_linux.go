package bwrap

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
)

// Cgroup is the session cgroup a run starts in: devsandbox makes it for the limits
// it enforces with one (package cgroup) and removes it at the end of the run.
type Cgroup struct {
	// Dirs are its directories, one per cgroup hierarchy.
	Dirs []string
	// Join is set when the join step at the start of Spec.Prefix moves the sandbox
	// in (cgroup v1); otherwise Run starts the first process in it
	// (CLONE_INTO_CGROUP, cgroup v2).
	Join bool
	// Limits are the values written to it, for people.
	Limits []string
}

// sessionPlaceholder stands for a session cgroup's name before Run makes it.
const sessionPlaceholder = "<session>"

// minCloneKernel is the first Linux release with CLONE_INTO_CGROUP.
var minCloneKernel = [2]int{5, 7}

// placement describes the session cgroup called name in hs, holding the limits of p
// that e enforces with it. CLONE_INTO_CGROUP (when clone is set: the kernel has it)
// serves a session cgroup that is one v2 directory; otherwise the join step moves
// the first process in.
func placement(p *isolator.Plan, e enforcement, hs []cgroup.Hierarchy, name string, clone bool) *Cgroup {
	c := &Cgroup{Join: len(hs) != 1 || !hs[0].V2 || !clone}
	for _, h := range hs {
		c.Dirs = append(c.Dirs, filepath.Join(h.Parent, name))
	}
	if e.pids == byCgroup {
		c.Limits = append(c.Limits, "pids.max "+strconv.Itoa(p.Limits.Pids))
	}
	if e.memory == byCgroup {
		c.Limits = append(c.Limits, fmt.Sprintf("memory %s (%d bytes), swap off", p.Limits.MemoryText(), p.Limits.Memory))
	}
	if e.cpus == byCgroup {
		q, _ := cgroup.Quota(p.Limits.CPUs)
		c.Limits = append(c.Limits, fmt.Sprintf("CPU quota %d µs per %d µs", q, cgroup.Period))
	}
	for _, h := range hs {
		if h.Caps != (cgroup.Limits{}) {
			c.Limits = append(c.Limits, fmt.Sprintf("at most the limits of the cgroup devsandbox runs in (pids %d, memory %d bytes, CPUs %g; 0 is none)", h.Caps.Pids, h.Caps.Memory, h.Caps.CPUs))
		}
	}
	return c
}

// sessionLimits are the limits of p that e enforces with the session cgroup.
func sessionLimits(p *isolator.Plan, e enforcement) cgroup.Limits {
	var l cgroup.Limits
	if e.pids == byCgroup {
		l.Pids = p.Limits.Pids
	}
	if e.memory == byCgroup {
		l.Memory = p.Limits.Memory
	}
	if e.cpus == byCgroup {
		l.CPUs = p.Limits.CPUs
	}
	return l
}

// joinPrefix is the join step: the init moves itself into the session cgroup's
// directories, then execs the rest of the command line.
func joinPrefix(p *isolator.Plan, c *Cgroup) ([]string, error) {
	self := initBinary(p)
	if self == "" {
		return nil, fmt.Errorf("the session cgroup of the resource limits needs devsandbox-init (Plan.Self) to join it")
	}
	a := []string{self, cgroup.JoinArg, fmt.Sprintf("--report-fd=%d", ReadyFD)}
	for _, d := range c.Dirs {
		a = append(a, filepath.Join(d, "cgroup.procs"))
	}
	return append(a, "--"), nil
}

// probeLimits is what the choice of limits depends on, probed on this host (each
// part only when asked), and the cgroup layout it probed.
func probeLimits(p *isolator.Plan) (limitHost, func() *cgroup.Layout) {
	layout := sync.OnceValue(func() *cgroup.Layout { return cgroup.Probe(cgroup.OnHost()) })
	scope := hostScope(p)
	return limitHost{
		root:  p.User.UID == 0,
		nproc: nprocErr(kernelRelease()),
		cgroup: func(ctrls ...string) error {
			_, err := layout().For(ctrls...)
			return err
		},
		scope: scope.check,
	}, layout
}

// chooseHere picks the enforcement of p's limits on this host and, when a limit
// goes into a session cgroup or a scope, checks that no writable mount hands the
// cgroup file system to the sandbox.
func chooseHere(p *isolator.Plan) (enforcement, *cgroup.Layout, error) {
	h, layout := probeLimits(p)
	e, err := chooseLimits(p.Limits, h)
	if err != nil {
		return e, nil, err
	}
	if !e.uses(byCgroup) && !e.uses(byScope) {
		return e, nil, nil
	}
	if e.cpus == byCgroup {
		if _, err := cgroup.Quota(p.Limits.CPUs); err != nil {
			return e, nil, fmt.Errorf("%w: %v; the command did not run", isolator.ErrProtection, err)
		}
	}
	l := layout()
	return e, l, exposedCgroups(p, l.Mounts)
}

// exposedCgroups refuses a writable mount that shows a cgroup file system in the
// sandbox: through it the sandbox could lift its own limits (root, or the owner of a
// delegated subtree, may write its cgroup's files) or move out of its cgroup.
func exposedCgroups(p *isolator.Plan, mounts []string) error {
	for _, m := range p.Mounts {
		if m.Kind != isolator.Bind || m.ReadOnly {
			continue
		}
		for _, cm := range mounts {
			if isolator.Within(cm, m.Source) || isolator.Within(m.Source, cm) {
				return fmt.Errorf("%w: the writable mount of %s (%s) shows the cgroup file system at %s in the sandbox, which could lift its own resource limits through it; mount it read-only, or run without the limits (limits.pids = 0, no limits.memory or limits.cpus); the command did not run",
					isolator.ErrProtection, m.Source, m.Why, cm)
			}
		}
	}
	return nil
}

// openSession sweeps the session cgroups killed runs left and makes this run's.
func openSession(p *isolator.Plan, e enforcement, l *cgroup.Layout) (*cgroup.Session, *Cgroup, error) {
	hs, err := l.For(e.controllers(byCgroup)...)
	if err == nil {
		cgroup.Sweep(l.Hierarchies)
		var s *cgroup.Session
		if s, err = cgroup.Create(hs, p.Project.ID, sessionLimits(p, e), l.Swap); err == nil {
			return s, placement(p, e, hs, s.Name, kernelAtLeast(kernelRelease(), minCloneKernel)), nil
		}
	}
	return nil, nil, fmt.Errorf("%w: making the session cgroup for the resource limits: %w; the command did not run. `devsandbox doctor` shows what this host has", isolator.ErrProtection, flatErr{err})
}

// startIn makes the command line argv (started with attr) start in the session cgroup c (cg once made): cloned into it
// (CLONE_INTO_CGROUP), or through the join step at the head of its command line,
// which runs as the init (InitPath names it to devsandbox acting as one).
func startIn(argv []string, attr *syscall.SysProcAttr, c *Cgroup, cg *cgroup.Session) error {
	if c == nil {
		return nil
	}
	if c.Join {
		argv[0] = InitPath
		return nil
	}
	fd, ok := cg.CloneFD()
	if !ok {
		return fmt.Errorf("%w: the session cgroup cannot be entered with CLONE_INTO_CGROUP; the command did not run", isolator.ErrProtection)
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return nil
}

// reportLimits tells w, after a run that exited with code, which of p's limits
// stopped the command: the out-of-memory killer (a command killed by SIGKILL), and
// forks the session cgroup's process limit refused.
func reportLimits(w io.Writer, p *isolator.Plan, spec *Spec, cg *cgroup.Session, code int) {
	if code == 128+int(syscall.SIGKILL) && p.Limits.Memory > 0 && outOfMemory(p, spec, cg) {
		fmt.Fprintf(w, "devsandbox: %s\n", p.Limits.OOMMessage())
	}
	if cg != nil {
		if n := cg.PidsRefused(); n > 0 {
			fmt.Fprintf(w, "devsandbox: %s\n", p.Limits.PidsMessage(n))
		}
	}
}

// outOfMemory reports whether the kernel's out-of-memory killer killed a process in
// the run's scope or session cgroup. It asks systemd for a scope's result, so it
// runs only after a command killed by SIGKILL.
func outOfMemory(p *isolator.Plan, spec *Spec, cg *cgroup.Session) bool {
	switch {
	case cg != nil && cg.OOMKills() > 0:
		return true
	case spec.Scope != "":
		return scopeOOM(p, spec.Scope)
	}
	return false
}
