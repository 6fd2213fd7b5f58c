package docker

import (
	"time"

	"github.com/devsandbox/devsandbox/isolator/runmark"
)

// markRun holds, until release, the project's run mark (package runmark), which
// `devsandbox sandboxes prune` asks before it takes the project for unused or sweeps
// its content volumes, and a run's sweep asks (othersRunning). own is its name.
func markRun(stateDir string) (own string, release func(), err error) {
	m, err := runmark.Hold(stateDir)
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
