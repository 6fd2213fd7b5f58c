package pin

import (
	"fmt"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// Gone explains err, a launch's setup failure before the command ran (an engine that
// could not mount a source, the init's refusal of what it found mounted): when
// sources of s were removed or replaced on the host since they were pinned (Removed),
// the engine's message names a descriptor, a volume or the init's check, not the
// host path nor the race; the error returned names them and wraps err. Else, and for
// a nil s (nothing pinned), it returns err. mounter names what mounts the sources
// ("the docker engine", "podman").
//
// Call it before the launch's own clean-up removes any source it made (a session's
// directory): Removed would name those too.
func (s *Set) Gone(mounter string, err error) error {
	if err == nil || s == nil {
		return err
	}
	if removed := s.Removed(); len(removed) > 0 {
		return RemovedError(removed, mounter, err)
	}
	return err
}

// RemovedError is the error of a launch that stopped because removed, pinned sources,
// were removed or replaced on the host while the sandbox was being set up; err is the
// failure as mounter ("bubblewrap", "the docker engine", "podman") met it. It has the
// class isolator.ErrProtection: the command did not run, and sandbox.mode = auto must
// not run it unsandboxed.
func RemovedError(removed []string, mounter string, err error) error {
	return fmt.Errorf("%w: %s was removed or replaced on the host while the sandbox was being set up, so %s could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: %w",
		isolator.ErrProtection, strings.Join(removed, ", "), mounter, err)
}
