// Package diskguard keeps a reserve of free space on the host file systems a
// sandbox writes (the project, the sandbox home, the session /tmp, writable binds):
// a run is refused when one of them is already under the reserve, and stopped when
// one falls under it while the run goes on.
//
// There is no unprivileged quota per directory, so the guard reads the free space
// (statfs) at an interval: it bounds how far a run can fill a file system, not
// exactly. A command writing more than the reserve between two reads takes part of
// the reserve; the stop itself kills the sandbox at once (isolator.ErrStopNow), with
// no grace to write through. Named volumes and a
// container's root file system live in the engine's storage, which the guard does
// not see.
package diskguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// ErrLow is wrapped by a LowError.
var ErrLow = errors.New("a host file system the sandbox writes is under sandbox.disk_reserve")

// LowError names the file system under the reserve.
type LowError struct {
	Path    string // the host directory whose file system is low
	Avail   uint64 // bytes available to an unprivileged user
	Reserve uint64
}

func (e *LowError) Error() string {
	return fmt.Sprintf("the file system holding %s has %s available, under the %s sandbox.disk_reserve keeps for the rest of the host; free space there, or lower sandbox.disk_reserve in your config file (\"0\" turns the guard off)",
		e.Path, size(e.Avail), size(e.Reserve))
}

// Unwrap returns ErrLow, and isolator.ErrStopNow: a run the reserve ends is killed
// at once, since a command that goes on writing through a stop's grace would fill
// the file system.
func (e *LowError) Unwrap() []error { return []error{ErrLow, isolator.ErrStopNow} }

// Interval is how often Watch reads the free space.
const Interval = 200 * time.Millisecond

// Statfs returns the bytes available to an unprivileged user on the file system
// holding path.
type Statfs func(path string) (uint64, error)

// Guard checks Paths against Reserve. The zero Reserve checks nothing.
type Guard struct {
	Reserve uint64
	Paths   []string
	Statfs  Statfs
}

// Check returns a *LowError for the first of Paths whose file system has less than
// Reserve available. A path that does not exist is skipped (an optional bind's
// source; a directory the run makes later is under a checked parent); another
// error of statfs is returned: a reserve that cannot be read is not kept.
func (g Guard) Check() error {
	if g.Reserve == 0 {
		return nil
	}
	for _, p := range g.Paths {
		avail, err := g.Statfs(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the free space of the file system holding %s for sandbox.disk_reserve: %w", p, err)
		}
		if avail < g.Reserve {
			return &LowError{Path: p, Avail: avail, Reserve: g.Reserve}
		}
	}
	return nil
}

// Watch runs Check at each tick until ctx ends; the first time it fails it calls
// stop with its error and returns. Watch returns at once without a reserve.
func (g Guard) Watch(ctx context.Context, tick <-chan time.Time, stop func(error)) {
	if g.Reserve == 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if err := g.Check(); err != nil {
				stop(err)
				return
			}
		}
	}
}

// Paths returns the host directories of p the sandbox writes, each once: the
// project, the sandbox home, the state directory (the session /tmp's), the shm
// directory of a shm /tmp, and the sources of writable binds.
func Paths(p *isolator.Plan) []string {
	var out []string
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(p.Project.Dir)
	add(p.SandboxHome)
	add(p.StateDir)
	if p.Tmp.Kind != "tmpfs" {
		add(p.Tmp.Dir)
	}
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && !m.ReadOnly {
			add(m.Source)
		}
	}
	return out
}

// size writes n bytes the way a user reads them.
func size(n uint64) string {
	switch {
	case n == NoBlocks:
		return "no limit (a file system without blocks)"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
