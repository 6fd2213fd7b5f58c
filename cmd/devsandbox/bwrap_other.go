//go:build !linux

package main

import (
	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// This binary has no bwrap backend: bwrap and its shim (isolator/shim) need Linux.
// What follows stands in for bwrap_linux.go.

// startup has nothing to do: this binary is never a shim (the docker isolator runs
// the Linux devsandbox-init in the container), and the Docker engine, not
// devsandbox, starts the sandbox, so nothing devsandbox inherited can reach it.
func startup() {}

// autoOrder is the preference of isolator = "auto".
var autoOrder = []string{"docker"}

// noBwrap stands for the bwrap backend in the signatures bwrap_linux.go has.
type noBwrap struct{}

func (a *app) newBwrap(*config.Config, func(string)) *noBwrap { return nil }

func (a *app) doctorBwrap(string) *noBwrap { return nil }

// isolatorTable is the explicit table of backends this binary has. dk configures the
// docker backend (nil: from defaults); see docker.go. kr is the krun backend, which
// runs in devsandbox-krun (see krun.go).
func isolatorTable(_ *noBwrap, dk *dockerSettings, kr *handoff.Stub) isolator.Table {
	return isolator.Table{
		"docker": func() isolator.Isolator { return newDocker(dk) },
		"krun":   func() isolator.Isolator { return kr },
	}
}
