package docker

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// viaContent returns a copy of p in which each read-only anchor (isolator.Mount.Anchor:
// a bind whose source a concurrent session can swap for a symlink) that the engine
// cannot mount from the file devsandbox pinned is delivered as its content, read
// from that file: a file on every engine (the descriptor volume anchorMount makes is
// a directory), and with dirs (an engine that pins nothing) a directory too, as an
// empty read-only directory holding a read-only copy of each of its regular files.
// What the sandbox sees is then what was checked, and the engine binds no path a
// sandbox can swap. A writable anchor that cannot be mounted from its pinned
// directory is refused. source returns the pinned source of p.Mounts[i] (nil: an
// optional source that is gone, left out) and what releases it once read.
func viaContent(p *isolator.Plan, source func(i int) (*pin.Source, func(), error), dirs bool) (*isolator.Plan, error) {
	cp := *p
	cp.Mounts = make([]isolator.Mount, 0, len(p.Mounts))
	for i, m := range p.Mounts {
		if m.Kind != isolator.Bind || !m.Anchor {
			cp.Mounts = append(cp.Mounts, m)
			continue
		}
		src, release, err := source(i)
		if err != nil {
			return nil, fmt.Errorf("%w: the source of the mount at %s (%s): %w", isolator.ErrProtection, m.Target(p.User.HostHome), m.Why, err)
		}
		ms, err := deliver(p, i, src, dirs)
		release()
		if err != nil {
			return nil, err
		}
		cp.Mounts = append(cp.Mounts, ms...)
	}
	return &cp, nil
}

// deliver returns what replaces the anchor p.Mounts[i], pinned as src.
func deliver(p *isolator.Plan, i int, src *pin.Source, dirs bool) ([]isolator.Mount, error) {
	m := p.Mounts[i]
	switch {
	case src == nil:
		return nil, nil
	case src.Dir && !dirs:
		return []isolator.Mount{m}, nil // anchorMount, from the pinned directory
	case !m.ReadOnly:
		return nil, fmt.Errorf("%w: %s (%s) is mounted writable and lies where a sandbox can write: the docker engine can bind it only by path, which a concurrent session of the project can swap for a symlink, and the engine would then bind where the link leads, on the host. Use `--isolator bwrap`, an engine on this host (unix socket), or a directory outside the project", isolator.ErrProtection, m.Source, m.Why)
	case !src.Dir:
		b, err := src.ReadFile()
		if err != nil {
			return nil, contentError(m, err)
		}
		return []isolator.Mount{{Kind: isolator.Data, Dest: m.Dest, HomeRel: m.HomeRel, Content: b, Why: m.Why}}, nil
	}
	es, err := src.ReadDir()
	if err != nil {
		return nil, contentError(m, err)
	}
	out := []isolator.Mount{{Kind: isolator.MaskDir, Dest: m.Dest, HomeRel: m.HomeRel, Why: m.Why}}
	for _, e := range es {
		f := isolator.Mount{Kind: isolator.Data, Content: e.Content, Why: m.Why}
		if m.HomeRel != "" {
			f.HomeRel = path.Join(m.HomeRel, e.Name)
		} else {
			f.Dest = path.Join(m.Dest, e.Name)
		}
		if !masked(p.Mounts[i+1:], f.Target(p.User.HostHome), p.User.HostHome) {
			out = append(out, f)
		}
	}
	return out, nil
}

// masked reports whether one of ms masks t: its content must not travel.
func masked(ms []isolator.Mount, t, home string) bool {
	for _, m := range ms {
		if (m.Kind == isolator.MaskFile || m.Kind == isolator.MaskDir) && isolator.Within(t, m.Target(home)) {
			return true
		}
	}
	return false
}

func contentError(m isolator.Mount, err error) error {
	return fmt.Errorf("%w: %s (%s) lies where a sandbox can write and the docker engine cannot mount the file devsandbox checked, so a read-only copy is delivered instead, which failed: %w; use `--isolator bwrap` or an engine on this host (unix socket)", isolator.ErrProtection, m.Source, m.Why, err)
}

// remoteSources pins, on this host, the sources of p's anchors for an engine that
// pins nothing: viaContent reads them, then releases them.
func remoteSources(p *isolator.Plan) func(i int) (*pin.Source, func(), error) {
	return func(i int) (*pin.Source, func(), error) {
		m := p.Mounts[i]
		s, err := pin.OpenIn(p, m.Source)
		if errors.Is(err, os.ErrNotExist) && m.Optional {
			return nil, func() {}, nil
		}
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
}
