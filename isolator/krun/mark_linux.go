package krun

import (
	"path/filepath"

	"github.com/devsandbox/devsandbox/isolator/tmpdir"
)

// MarkRun holds, for the run's life, the mark a bwrap run holds: a locked session
// directory in the state directory's tmp (package tmpdir), which `devsandbox
// sandboxes prune` asks (tmpdir.Held) before it takes the project for unused. The
// sandbox's /tmp is not there: the directory stays empty.
func (osHost) MarkRun(stateDir string) (release func(), err error) {
	s, err := tmpdir.Acquire(filepath.Join(stateDir, "tmp"))
	if err != nil {
		return nil, err
	}
	return func() { _ = s.Release() }, nil
}
