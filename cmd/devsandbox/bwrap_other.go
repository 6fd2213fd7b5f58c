//go:build !linux

package main

import (
	"errors"
	"fmt"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// This binary has no bwrap backend: bwrap, its shim (isolator/shim) and the relay
// of published ports need Linux. What follows stands in for bwrap_linux.go.

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
func isolatorTable(_ *noBwrap, dk *dockerSettings, kr *helper.Stub) isolator.Table {
	return isolator.Table{
		"docker": func() isolator.Isolator { return newDocker(dk) },
		"krun":   func() isolator.Isolator { return kr },
	}
}

// planPublish does nothing here, and startPublish refuses: published ports are relayed
// through Unix sockets in a directory the sandbox shares, which Docker Desktop's VM
// does not pass through.
func planPublish(*isolator.Plan, config.Host, string) {}

func startPublish(*isolator.Plan) (stop func(), err error) {
	return nil, fmt.Errorf("%w: --publish / egress.publish needs Linux (the ports are relayed through Unix sockets, which Docker Desktop does not share with its VM); %w", isolator.ErrProtection, errors.ErrUnsupported)
}
