package isolator

import "path/filepath"

// WritableIn returns the bind through which the sandbox of p can write the host
// directory dir, and where dir lies in the sandbox: a read-write bind holds it and no
// later mount covers that place (a read-only bind, a mask). ok is false when none
// does. dir is compared as written: a caller holding a path through a link asks
// for its resolved form too.
func WritableIn(p *Plan, dir string) (m Mount, at string, ok bool) {
	home := p.User.HostHome
	for _, b := range p.Mounts {
		if b.Kind != Bind || b.ReadOnly || !Within(dir, b.Source) {
			continue
		}
		rel, err := filepath.Rel(b.Source, dir)
		if err != nil {
			continue
		}
		dst := filepath.Join(b.Target(home), rel)
		last := -1
		for i, c := range p.Mounts {
			if Within(dst, c.Target(home)) {
				last = i
			}
		}
		if c := p.Mounts[last]; c.Kind == Bind && !c.ReadOnly {
			return c, dst, true
		}
	}
	return Mount{}, "", false
}
