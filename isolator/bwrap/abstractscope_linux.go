package bwrap

import (
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/landlock"
)

// abstractScopeRow is doctor's row on the host's abstract Unix sockets under
// `--egress=open` (bwrap shares the host's network namespace, which holds them): a
// warning, never a failure, where the kernel cannot scope them (no Landlock ABI 6).
func abstractScopeRow(abi int) isolator.Check {
	const name = "host abstract sockets (egress open)"
	if abi >= landlock.ScopeABI {
		return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active},
			Detail: fmt.Sprintf("Landlock ABI %d: under --egress=open the command reaches only the abstract Unix sockets made in the sandbox", abi)}
	}
	return isolator.Check{Name: name, Status: isolator.Status{
		State: isolator.Warning,
		Reason: fmt.Sprintf("this kernel has Landlock ABI %d (scopes need 6, Linux 6.12): under --egress=open the sandbox shares the host's network namespace "+
			"and can connect to the host's abstract Unix sockets (an X server's @/tmp/.X11-unix/X0, a D-Bus bus at an abstract address)", abi),
		Fix: "use --egress=proxy, allowlist or none (a network namespace of the sandbox's own), or Linux 6.12 or later with Landlock enabled (lsm=...,landlock)",
	}}
}
