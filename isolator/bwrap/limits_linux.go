package bwrap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
)

// Resource limits under bwrap. Each limit the Plan sets is enforced by one of three
// mechanisms, chosen by what the host offers (chooseLimits):
//   - RLIMIT_NPROC (limits.pids), set by the init inside the sandbox's own user
//     namespace, where the kernel counts only the sandbox's tasks (since Linux 5.14,
//     which counts RLIMIT_NPROC per user namespace; before, it counts all of the
//     user's tasks on the host). The kernel does not apply it to root.
//   - a session cgroup devsandbox makes itself (package cgroup) where the user may:
//     root on cgroup v1 or v2, or a delegated cgroup v2 subtree. The sandbox starts
//     in it: bwrap is cloned into it on v2, and a join step of the init moves itself
//     in before it execs bwrap on v1.
//   - a transient scope of the user's systemd manager (systemd-run --user --scope),
//     which needs cgroup v2 with the controllers delegated to the manager.

// mechanism is how one limit is enforced.
type mechanism int

const (
	unlimited mechanism = iota
	byRlimit            // RLIMIT_NPROC in the sandbox's user namespace
	byCgroup            // a session cgroup devsandbox makes
	byScope             // a systemd user scope
)

// enforcement says how each limit of a run is enforced.
type enforcement struct {
	pids, memory, cpus mechanism
}

// uses reports whether m enforces one of the limits.
func (e enforcement) uses(m mechanism) bool {
	return e.pids == m || e.memory == m || e.cpus == m
}

// controllers are the cgroup controllers of the limits e enforces with m.
func (e enforcement) controllers(m mechanism) []string {
	var cs []string
	if e.pids == m {
		cs = append(cs, cgroup.Pids)
	}
	if e.memory == m {
		cs = append(cs, cgroup.Memory)
	}
	if e.cpus == m {
		cs = append(cs, cgroup.CPU)
	}
	return cs
}

// defaultEnforcement is how a library run (WrapArgv, Command), which probes
// nothing, enforces l: RLIMIT_NPROC and a systemd user scope.
func defaultEnforcement(l isolator.Limits) enforcement {
	var e enforcement
	if l.Pids > 0 {
		e.pids = byRlimit
	}
	if l.Memory > 0 {
		e.memory = byScope
	}
	if l.CPUs > 0 {
		e.cpus = byScope
	}
	return e
}

// limitHost is what the choice depends on. cgroup and scope say why a session
// cgroup or a systemd user scope with the given controllers cannot be made (nil
// when it can); they are called only when a limit needs them.
type limitHost struct {
	root   bool  // the user is root, whom the kernel exempts from RLIMIT_NPROC
	nproc  error // why RLIMIT_NPROC does not count a sandbox's tasks apart (the kernel), or nil
	cgroup func(ctrls ...string) error
	scope  func(ctrls ...string) error
}

// errRootNproc is why RLIMIT_NPROC cannot bind root.
var errRootNproc = errors.New("the kernel does not apply RLIMIT_NPROC to root")

// try says why m cannot enforce limits of the controllers ctrls here, or nil.
func (h limitHost) try(m mechanism, ctrls ...string) error {
	switch m {
	case byRlimit:
		if h.root {
			return errRootNproc
		}
		return h.nproc
	case byCgroup:
		return h.cgroup(ctrls...)
	case byScope:
		return h.scope(ctrls...)
	}
	return nil
}

// chooseLimits picks how each limit of l is enforced on the host h, or says why one
// cannot be (isolator.ErrProtection). limits.memory and limits.cpus share one
// mechanism: a session cgroup first for root (the user manager of root is rare), a
// systemd user scope first for others (their delegated subtree is the manager's to
// organise). limits.pids goes into the session cgroup when there is one; else
// unprivileged users keep RLIMIT_NPROC, which costs nothing at launch; root needs a
// cgroup or a scope (TasksMax). A session cgroup and a scope never combine: both
// would place the sandbox.
func chooseLimits(l isolator.Limits, h limitHost) (enforcement, error) {
	var e enforcement
	var mc []string
	if l.Memory > 0 {
		mc = append(mc, cgroup.Memory)
	}
	if l.CPUs > 0 {
		mc = append(mc, cgroup.CPU)
	}
	shared := unlimited
	if len(mc) > 0 {
		order := []mechanism{byScope, byCgroup}
		if h.root {
			order = []mechanism{byCgroup, byScope}
		}
		m, why := first(h, order, mc...)
		if m == unlimited {
			return e, limitsError(l, false, why)
		}
		shared = m
		if l.Memory > 0 {
			e.memory = m
		}
		if l.CPUs > 0 {
			e.cpus = m
		}
	}
	if l.Pids > 0 {
		var order []mechanism
		switch {
		case shared == byCgroup:
			order = []mechanism{byCgroup, byRlimit}
		case shared == byScope:
			order = []mechanism{byRlimit, byScope}
		case h.root:
			order = []mechanism{byCgroup, byScope, byRlimit}
		default:
			order = []mechanism{byRlimit, byCgroup, byScope}
		}
		ctrls := append([]string{cgroup.Pids}, mc...)
		m, why := first(h, order, ctrls...)
		if m == unlimited {
			return e, limitsError(l, true, why)
		}
		e.pids = m
	}
	return e, nil
}

// first returns the first mechanism of order that can enforce the controllers
// ctrls (a cgroup or scope that also holds the limits of the other controllers), or
// unlimited and why each could not.
func first(h limitHost, order []mechanism, ctrls ...string) (mechanism, []string) {
	var why []string
	for _, m := range order {
		err := h.try(m, ctrls...)
		if err == nil {
			return m, nil
		}
		why = append(why, flatten(err))
	}
	return unlimited, why
}

// flatten joins the lines of a joined error.
func flatten(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// flatErr is an error on one line (flatten) that keeps its chain.
type flatErr struct{ error }

func (e flatErr) Error() string { return flatten(e.error) }
func (e flatErr) Unwrap() error { return e.error }

// limitError is a limit that no mechanism can enforce here: limits.pids when pids is
// set, else limits.memory and limits.cpus. It wraps isolator.ErrProtection.
type limitError struct {
	limits isolator.Limits
	pids   bool
	why    []string // each mechanism's reason
}

func limitsError(l isolator.Limits, pids bool, why []string) error {
	return &limitError{limits: l, pids: pids, why: why}
}

func (e *limitError) Unwrap() error { return isolator.ErrProtection }

// Reason is why, without the advice.
func (e *limitError) Reason() string { return strings.Join(e.why, "; ") }

func (e *limitError) Error() string {
	if e.pids {
		return fmt.Sprintf("%v: limits.pids (%d) cannot be enforced under bwrap here (%s); the command did not run. Run devsandbox as a normal user on Linux 5.14 or later, or as root where it can make cgroups, use --isolator=docker, or set limits.pids = 0 (--pids=0) to run without a process limit. `devsandbox doctor` shows what this host has",
			isolator.ErrProtection, e.limits.Pids, e.Reason())
	}
	var keys []string
	if e.limits.Memory > 0 {
		keys = append(keys, "limits.memory (--memory)")
	}
	if e.limits.CPUs > 0 {
		keys = append(keys, "limits.cpus (--cpus)")
	}
	return fmt.Sprintf("%v: %s cannot be enforced under bwrap here (%s); the command did not run. They need a cgroup devsandbox can make (as root, or in a delegated cgroup v2 subtree) or cgroup v2 with a systemd user manager that delegates the memory and cpu controllers; run without them, or use --isolator=docker. `devsandbox doctor` shows what this host has",
		isolator.ErrProtection, strings.Join(keys, " and "), e.Reason())
}

// minPidsKernel is the first Linux release counting RLIMIT_NPROC per user namespace.
var minPidsKernel = [2]int{5, 14}

// kernelRelease is the running kernel's release ("6.1.0-13-amd64").
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// nprocErr says why RLIMIT_NPROC set in a user namespace does not count only that
// namespace's tasks on a kernel of this release, or nil.
func nprocErr(release string) error {
	if !kernelAtLeast(release, minPidsKernel) {
		return fmt.Errorf("RLIMIT_NPROC counts a sandbox's tasks apart only from Linux %d.%d on, and this kernel is %q", minPidsKernel[0], minPidsKernel[1], release)
	}
	return nil
}

// kernelAtLeast reports whether a release such as "6.1.0-13-amd64" is min or later.
func kernelAtLeast(release string, min [2]int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}
