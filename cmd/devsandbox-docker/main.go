// Command devsandbox-docker is the docker isolator of devsandbox: it links the Docker
// client, which devsandbox itself does not (its package initialisation would slow
// every launch). devsandbox runs it with one request on a pipe; see isolator/handoff
// for the contract. It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/devsandbox/devsandbox/internal/nocore"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/docker"
	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

func main() {
	// It holds secrets (package nocore): no core of it may land in a working directory.
	if err := nocore.Off(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot turn off core dumps: %v\n", helper.Program, err)
		os.Exit(2)
	}
	if len(os.Args) != 2 || os.Args[1] != handoff.ServeArg {
		fmt.Fprintf(os.Stderr, "%s: the docker isolator of devsandbox; run `devsandbox --isolator=docker`\n", helper.Program)
		os.Exit(2)
	}
	warn := func(m string) { fmt.Fprintf(os.Stderr, "devsandbox: warning: %s\n", termsafe.Line(m)) }
	h, head := docker.Handler(warn)
	code := handoff.ServeEarly(h, head, os.Stdin, os.Stdout, os.Stderr)
	// The answer is written and the run's output relayed. The kernel closes a
	// process's files only after it has torn down its memory (most of a millisecond
	// here): a reader of devsandbox's output through a pipe, which this program
	// shares, would wait for that.
	os.Stdout.Close()
	os.Stderr.Close()
	os.Exit(code)
}
