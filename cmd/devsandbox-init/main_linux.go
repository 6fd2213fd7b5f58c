// Command devsandbox-init is the first program run inside a sandbox: it takes the
// terminal, reports readiness to the host and execs the command (see isolator/sandboxinit).
// It is a separate, small binary because it starts on every launch; devsandbox can
// play the same role, only slower.
package main

import (
	"os"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit"
)

func main() {
	os.Exit(sandboxinit.Main(os.Args[1:], os.Stderr))
}
