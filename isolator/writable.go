package isolator

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

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

// HostProgram refuses a program devsandbox starts on the host, outside every
// namespace (bubblewrap, pasta, systemd-run, podman's service), that a PATH lookup
// found at path where the sandbox of p can write: a PATH entry in the project (an
// activated .venv/bin, npm run's node_modules/.bin, direnv's PATH_add) or in a
// read-write bind. Whatever a sandboxed program planted there under that name
// would run as the user, unsandboxed. The directory the lookup went through, and
// where the program and that directory resolve to, are each judged: a link in a
// writable place can be pointed anywhere. A path that does not resolve is left to
// the start, which fails on it. what names the program for people.
func HostProgram(p *Plan, what, path string) error {
	if p == nil || path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != dir {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		if m, at, ok := WritableIn(p, d); ok {
			return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies where this sandbox can write (%s, as %s, through %s): a sandboxed program could have put it there, and it would run outside the sandbox; remove %s from PATH, or put the directory of the %s you mean before it",
				ErrProtection, what, path, d, at, m.Why, dir, what)
		}
	}
	return nil
}

// UserWritable returns the first of path, the directories above it, and those of
// where it resolves to, that this process's user may write ("" for none). Where no
// plan says what a sandbox writes (bwrap's early start, which runs bubblewrap before
// the plan exists; doctor without a configuration), a program is started only when
// no sandbox of the user's could have planted it.
func UserWritable(path string) string {
	paths := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		paths = append(paths, real)
	}
	for _, p := range paths {
		for q := p; ; q = filepath.Dir(q) {
			if unix.Access(q, unix.W_OK) == nil {
				return q
			}
			if q == "/" || q == "." {
				break
			}
		}
	}
	return ""
}
