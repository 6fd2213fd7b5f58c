package krun

import (
	"context"
	"io"

	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/runmark"
)

// MarkRun holds the project's run mark (package runmark) for the run's life: `devsandbox
// sandboxes prune` asks it before it takes the project for unused, and later krun runs
// before they remove a container labelled with it (LabelRunMark). It is made under the
// project's lock (runmark.HoldShared): while prune or rm holds it, the wait is said on
// stderr and ends with ctx or a signal from sigs.
func (osHost) MarkRun(ctx context.Context, stateDir string, stderr io.Writer, sigs <-chan handoff.Signal) (mark string, release func(), err error) {
	m, err := runmark.HoldShared(ctx, stateDir, projlock.Waiting(stderr, stateDir), sigs)
	if err != nil {
		return "", nil, err
	}
	return m.Path(), m.Release, nil
}
