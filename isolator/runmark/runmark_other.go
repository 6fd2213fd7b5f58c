//go:build !linux

// Package runmark marks a project as in use for the life of a run; on this system it
// marks nothing (`devsandbox sandboxes prune` asks the marks on Linux alone).
package runmark

import (
	"context"
	"time"

	"github.com/devsandbox/devsandbox/isolator/projlock"
)

// Dir is the directory of the marks in a project's state directory.
const Dir = "runs"

// Mark is a run's mark.
type Mark struct{ Name string }

// Hold marks nothing.
func Hold(string) (*Mark, error) { return &Mark{}, nil }

// HoldShared takes the project's lock (projlock.Shared) and drops it: it marks nothing.
func HoldShared[T any](ctx context.Context, stateDir string, waiting func(), interrupt <-chan T) (*Mark, error) {
	unlock, err := projlock.Shared(ctx, stateDir, waiting, interrupt)
	if err != nil {
		return nil, err
	}
	unlock()
	return &Mark{}, nil
}

// Release does nothing.
func (*Mark) Release() {}

// Path is "": there is no mark.
func (*Mark) Path() string { return "" }

// Dead is false: with no marks to ask, no run is known to have ended.
func Dead(string) bool { return false }

// Where is "": no mark's path is asked.
func Where() string { return "" }

// Held is true: with no marks to ask, a run may always be going on.
func Held(string, string, time.Time) bool { return true }
