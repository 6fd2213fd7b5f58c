// Command devsandbox-init is the first program run inside a sandbox: it takes the
// terminal, reports readiness to the host and execs the command (see isolator/shim).
// It is a separate, small binary because it starts on every launch; devsandbox can
// play the same role, only slower.
package main

import (
	"os"

	"github.com/devsandbox/devsandbox/isolator/shim"
)

func main() {
	os.Exit(shim.Main(os.Args[1:], os.Stderr))
}
