package krun

import "github.com/devsandbox/devsandbox/isolator/runmark"

// MarkRun holds the project's run mark (package runmark) for the run's life: `devsandbox
// sandboxes prune` asks it before it takes the project for unused, and later krun runs
// before they remove a container labelled with it (LabelRunMark).
func (osHost) MarkRun(stateDir string) (mark string, release func(), err error) {
	m, err := runmark.Hold(stateDir)
	if err != nil {
		return "", nil, err
	}
	return m.Path(), m.Release, nil
}
