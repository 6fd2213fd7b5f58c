// Command devsandbox-krun is the krun isolator of devsandbox: it links podman's API
// bindings, which devsandbox itself does not (their package initialisation would slow
// every launch). devsandbox runs it with one request on a pipe; see
// isolator/krun/helper for the contract. It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/devsandbox/devsandbox/isolator/krun"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == krun.SuperviseArg {
		os.Exit(krun.Supervise(os.Args[2], os.Args[3], os.Stderr))
	}
	if len(os.Args) != 2 || os.Args[1] != "serve" {
		fmt.Fprintf(os.Stderr, "%s: the krun isolator of devsandbox; run `devsandbox --isolator=krun`\n", helper.Program)
		os.Exit(2)
	}
	os.Exit(helper.Serve(func(s helper.Settings, sigs <-chan helper.Signal, phase func(string)) helper.Backend {
		return &krun.Isolator{
			Settings: s,
			Signals:  sigs,
			Phase:    phase,
			Warn:     func(m string) { fmt.Fprintf(os.Stderr, "devsandbox: warning: %s\n", m) },
		}
	}, os.Stdin, os.Stdout, os.Stderr))
}
