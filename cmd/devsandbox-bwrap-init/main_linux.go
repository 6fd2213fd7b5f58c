// Command devsandbox-bwrap-init is the bwrap isolator's init: the sandbox's pid 1,
// which checks the manifest, reports readiness to the host and starts the command
// (see isolator/sandboxinit's Main), and the bwrap roles beside it (the cgroup join
// step, ssh's proxy connection, published ports). It starts on every bwrap launch, so
// it links only these roles: devsandbox-init, which devsandbox uses when this binary
// is not installed, also carries the container and firewall roles, whose code and
// package initialisation every start would otherwise pay for.
package main

import (
	"os"

	"github.com/devsandbox/devsandbox/internal/launchprof"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit"
)

func main() {
	launchprof.Start() // a build with the launchprofile tag only (make profile-launch)
	code := sandboxinit.Main(os.Args[1:], os.Stderr)
	launchprof.Stop()
	os.Exit(code)
}
