package docker

import (
	"context"
	"io"
	"time"

	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/runmark"
)

// markRun holds, until release, the project's run mark (package runmark), which
// `devsandbox sandboxes prune` asks before it takes the project for unused or sweeps
// its content volumes, and a run's sweep asks (othersRunning). own is its name. It is
// made under the project's lock (runmark.HoldShared): while prune or rm holds it, the
// wait is said on stderr and ends with ctx or a signal from sigs.
func markRun(ctx context.Context, stateDir string, stderr io.Writer, sigs <-chan handoff.Signal) (own string, release func(), err error) {
	m, err := runmark.HoldShared(ctx, stateDir, projlock.Waiting(stderr, stateDir), sigs)
	if err != nil {
		return "", nil, err
	}
	return m.Name, m.Release, nil
}

// othersRunning reports whether a run of the project whose state directory is
// stateDir, other than the one holding own, is going on or starting.
func othersRunning(stateDir, own string, now time.Time) bool {
	return runmark.Held(stateDir, own, now)
}
