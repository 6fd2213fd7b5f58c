//go:build !linux

package main

import (
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/planner"
)

// This binary has no bwrap backend: bwrap and its init (isolator/sandboxinit) need Linux.
// What follows stands in for bwrap_linux.go.

// startup has nothing to do: this binary is never an init (the docker isolator runs
// the Linux devsandbox-init in the container), and the Docker engine, not
// devsandbox, starts the sandbox, so nothing devsandbox inherited can reach it.
func startup() {}

// prepareHeap has nothing to do: hugeHeap is Linux's.
func prepareHeap() {}

// autoOrder is the preference of isolator = "auto".
var autoOrder = []string{"docker"}

// addBwrap adds nothing: there is no bwrap here.
func (a *app) addBwrap(isolator.Table, *config.Config, func(string)) {}

// etcHead stands in for bwrap's /etc snapshot opened ahead of the Plan.
type etcHead struct{}

// headStart does nothing: the /etc snapshot opened ahead is bwrap's.
func (a *app) headStart(*planner.SystemHead) {}

// headDone does nothing.
func (a *app) headDone() {}

// catchSignals does nothing: the backends here catch their own signals.
func (a *app) catchSignals(*config.Config) {}

// runGoingOn is false: the session dirs it asks are on Linux alone.
func runGoingOn(string) bool { return false }

// pruneRecords does nothing: the launch records are bwrap's.
func (a *app) pruneRecords(string, time.Duration, bool) {}

// pruneTmp does nothing: session /tmp dirs are bwrap's.
func (a *app) pruneTmp(string, bool) {}

// early stands in for bwrap's early start.
type early struct{}

// startEarly does nothing: the early start is bwrap's.
func (a *app) startEarly([]string) {}

// earlyRows is none: the early start is bwrap's.
func (a *app) earlyRows(*config.Config) []isolator.Check { return nil }

// earlyConfig does nothing: there is no early start here.
func (a *app) earlyConfig(*config.Config, string) {}

// abandonEarly does nothing: there is no early start here.
func (a *app) abandonEarly() {}
