// Command devsandbox-init is the first program run inside a sandbox: it takes the
// terminal, reports readiness to the host and execs the command (see isolator/sandboxinit).
// It is a separate, small binary because it starts on every launch; devsandbox can
// play the same role, only slower. It has every role of the init: the container roles
// of the docker and krun isolators (ContainerArg), the firewall role of the docker
// isolator (see isolator/sandboxinit/firewall) and the sandbox's side of its ssh agent
// stream (see isolator/sshagent, Carry), which devsandbox does not, and the
// bwrap roles, which devsandbox-bwrap-init, smaller still, plays when installed.
package main

import (
	"os"
	"strings"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/firewall"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
)

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], firewall.Arg) {
		os.Exit(firewall.Main(os.Args[1], os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], sshagent.CarryArg) {
		os.Exit(sshagent.CarryMain(strings.TrimPrefix(os.Args[1], sshagent.CarryArg), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(sandboxinit.Run(os.Args[1:], os.Stderr))
}
