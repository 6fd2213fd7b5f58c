// Package syscalls is the sandbox's syscall policy: one model of which system calls a
// sandboxed process may make, rendered for each isolator. Compile turns a Policy into
// Rules, the intermediate form (one disposition per system call name); BPF renders
// them as a seccomp program for one architecture (bwrap's --seccomp, and the init of
// a microVM), OCI as a seccomp profile (the docker engine and podman).
//
// The policy refuses at least what the default profiles of Docker and podman refuse
// to a process without capabilities, and in addition: creating namespaces (and with
// them root's view of mount, netfilter and the other interfaces most kernel privilege
// escalations go through), io_uring (which bypasses syscall filtering), the terminal
// ioctls that inject input or load line disciplines, and socket families other than
// Unix, IPv4, IPv6 and routing netlink. What developers run keeps working: debuggers
// and strace on the sandbox's own processes (ptrace, process_vm_readv), build tools,
// language runtimes, git and ssh. A Policy names the groups relaxed for a project.
//
// Everything here is pure and portable; nothing loads a filter.
package syscalls

import (
	"fmt"
	"slices"
	"strings"
)

// Group is a named set of system calls that the strict policy refuses and a project
// may allow (sandbox.relax_syscalls).
type Group string

// The relaxable groups.
const (
	// UserNS: new namespaces and what they are for inside one (mount, pivot_root,
	// chroot, setns, unshare, clone3): nested sandboxes such as Chromium's or bwrap.
	UserNS Group = "userns"
	// IOURing: io_uring rings (a database or runtime under test that needs them).
	IOURing Group = "io_uring"
	// Perf: perf_event_open (perf, profilers that sample through perf events; the
	// host's kernel.perf_event_paranoid still applies).
	Perf Group = "perf"
	// Sockets: every socket address family (AF_PACKET, AF_VSOCK, AF_ALG, ...) and
	// every netlink protocol.
	Sockets Group = "sockets"
)

// GroupInfo describes a Group for people.
type GroupInfo struct {
	Name  Group
	Allow string // what relaxing it allows
}

// Groups lists the relaxable groups, in the order they are documented.
var Groups = []GroupInfo{
	{UserNS, "new user (and other) namespaces, mount, pivot_root, chroot, setns, unshare and clone3: nested sandboxes such as Chromium's, bwrap or podman inside the sandbox"},
	{IOURing, "io_uring_setup, io_uring_enter and io_uring_register"},
	{Perf, "perf_event_open (perf, profilers that sample through perf events)"},
	{Sockets, "socket families other than Unix, IPv4, IPv6 and routing netlink (AF_PACKET, AF_VSOCK, AF_ALG, AF_BLUETOOTH, ...) and every netlink protocol"},
}

// GroupNames returns the names of the relaxable groups.
func GroupNames() []string {
	out := make([]string, len(Groups))
	for i, g := range Groups {
		out[i] = string(g.Name)
	}
	return out
}

// ParseGroup returns the group called s.
func ParseGroup(s string) (Group, error) {
	for _, g := range Groups {
		if string(g.Name) == s {
			return g.Name, nil
		}
	}
	return "", fmt.Errorf("unknown syscall group %q (want one of %s)", s, strings.Join(GroupNames(), ", "))
}

// Policy is the syscall policy of one sandbox. The zero value is the strict policy.
type Policy struct {
	// Relax are the groups allowed beyond the strict policy, sorted, without
	// duplicates.
	Relax []Group `json:"relax,omitempty"`
	// Unfiltered runs the sandbox without a syscall filter. Only a library user
	// sets it, for a harness that runs bwrap without devsandbox's init; no
	// configuration key or flag does.
	Unfiltered bool `json:"unfiltered,omitempty"`
}

// New returns the policy relaxing the named groups.
func New(relax []string) (Policy, error) {
	var p Policy
	for _, s := range relax {
		g, err := ParseGroup(s)
		if err != nil {
			return Policy{}, err
		}
		if !slices.Contains(p.Relax, g) {
			p.Relax = append(p.Relax, g)
		}
	}
	slices.Sort(p.Relax)
	return p, nil
}

// Relaxed reports whether g is allowed.
func (p Policy) Relaxed(g Group) bool { return slices.Contains(p.Relax, g) }

// String is the policy for people: "strict", or "strict, relaxed: io_uring, perf".
func (p Policy) String() string {
	if p.Unfiltered {
		return "unfiltered"
	}
	if len(p.Relax) == 0 {
		return "strict"
	}
	names := make([]string, len(p.Relax))
	for i, g := range p.Relax {
		names[i] = string(g)
	}
	return "strict, relaxed: " + strings.Join(names, ", ")
}
