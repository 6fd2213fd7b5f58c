package bwrap

import (
	"fmt"
	"path/filepath"

	"github.com/devsandbox/devsandbox/isolator"
)

// hostProgram refuses a program Run starts on the host, outside every namespace
// (bubblewrap, pasta, systemd-run), that a PATH lookup found where the sandbox of p
// can write: a PATH entry in the project (an activated .venv/bin, npm run's
// node_modules/.bin, direnv's PATH_add) or in a read-write bind. Whatever a sandboxed
// program planted there under that name would run as the user, unsandboxed. The
// directory the lookup went through, and where the program and that directory
// resolve to, are each judged: a link in a writable place can be pointed anywhere.
// A program devsandbox cannot judge (a path that does not resolve) is left to the
// start, which fails on it.
func hostProgram(p *isolator.Plan, what, path string) error {
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
		if m, at, ok := isolator.WritableIn(p, d); ok {
			return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies where this sandbox can write (%s, as %s, through %s): a sandboxed program could have put it there, and it would run outside the sandbox; remove %s from PATH, or put the directory of the %s you mean before it",
				isolator.ErrProtection, what, path, d, at, m.Why, dir, what)
		}
	}
	return nil
}
