package pin

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
)

// Record notes, without opening anything, the identity of each Bind source of p that
// exists (following links), for a backend whose engine binds by path on another
// machine and pins nothing: Removed and Gone then tell a failed setup whether a source
// was removed or replaced on this host since. It checks nothing: what the engine
// mounts there is its own view, compared with nothing.
func Record(p *isolator.Plan) *Set {
	s := &Set{Sources: make([]*Source, len(p.Mounts)), plan: p}
	for i, m := range p.Mounts {
		if m.Kind != isolator.Bind {
			continue
		}
		if id, dir, err := stat(m.Source); err == nil {
			s.Sources[i] = &Source{ID: id, Dir: dir, path: m.Source}
		}
	}
	return s
}

// stat returns the identity of the file at path, following links.
func stat(path string) (id isolator.FileID, dir bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return id, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return id, false, fmt.Errorf("%s: no device and inode numbers", path)
	}
	// Converted: macOS has an int32 device number.
	return isolator.FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, fi.IsDir(), nil
}

// Removed lists the pinned sources that are no longer at their path: removed on the
// host, or replaced by another file, since they were pinned. bwrap resolves a
// descriptor's source through /proc/self/fd, which names a removed file "… (deleted)",
// so it stops with "Can't find source path /proc/self/fd/N": this says which one. It
// compares each path (following links, as the user's own links were followed) with
// the identity pinned, so it works after the descriptors were handed to bwrap and
// closed. It is for messages only: nothing is mounted by these paths. A nil Set has
// none.
func (s *Set) Removed() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, src := range append(append([]*Source{}, s.Sources...), s.Empty) {
		if src == nil || src.path == "" {
			continue
		}
		id, _, err := stat(src.path)
		if errors.Is(err, os.ErrNotExist) || err == nil && id != src.ID {
			out = append(out, src.path)
		}
	}
	return out
}

// MasksGone returns the host files of the optional file masks Apply kept that are
// gone now (a host service's socket removed while the sandbox was set up): a
// bubblewrap that failed then could not create the mask's destination.
func (s *Set) MasksGone() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, p := range s.masked {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// Gone explains err, a launch's setup failure before the command ran (an engine that
// could not mount a source, the init's refusal of what it found mounted): when
// sources of s were removed or replaced on the host since they were pinned (Removed),
// the engine's message names a descriptor, a volume or the init's check, not the
// host path nor the race; the error returned names them and wraps err without
// devsandbox's guesses at the cause (an isolator.Guessed in err's chain: its Err),
// which the removal makes wrong. Else, and for a nil s (nothing pinned), it returns
// err. mounter names what mounts the sources ("the docker engine", "podman").
//
// Call it before the launch's own clean-up removes any source it made (a session's
// directory): Removed would name those too.
func (s *Set) Gone(mounter string, err error) error {
	if err == nil || s == nil {
		return err
	}
	if removed := s.Removed(); len(removed) > 0 {
		var g *isolator.Guessed
		if errors.As(err, &g) {
			err = g.Err
		}
		return RemovedError(removed, mounter, err)
	}
	return err
}

// RemovedError is the error of a launch that stopped because removed, pinned sources,
// were removed or replaced on the host while the sandbox was being set up; err is the
// failure as mounter ("bubblewrap", "the docker engine", "podman") met it, without
// guesses at its cause (isolator.Guessed). It has the class isolator.ErrProtection:
// the command did not run, and sandbox.mode = auto must not run it unsandboxed.
func RemovedError(removed []string, mounter string, err error) error {
	return fmt.Errorf("%w: %s was removed or replaced on the host while the sandbox was being set up, so %s could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: %w",
		isolator.ErrProtection, strings.Join(removed, ", "), mounter, err)
}
