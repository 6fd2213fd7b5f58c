package plan

import (
	"io/fs"
	"path"

	"github.com/devsandbox/devsandbox/isolator"
)

// maskMatcher decides which project files are masked.
type maskMatcher struct {
	mask, allow, skip []string
}

func (m maskMatcher) masked(name string) bool {
	if !matchAny(m.mask, name) {
		return false
	}
	return !matchAny(m.allow, name)
}

func (m maskMatcher) skipped(dir string) bool {
	for _, s := range m.skip {
		if s == dir {
			return true
		}
	}
	return false
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// findMasked walks root and returns the paths whose base name matches the mask globs,
// in walk order. Directories named in skip are not entered; symlinked directories are
// not followed (what they point to outside the project is not visible anyway). A
// matching symlink is returned together with its target when that lies in the project.
func findMasked(pr Probe, root string, m maskMatcher) ([]string, error) {
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := pr.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := e.Name()
			p := dir + "/" + name
			switch {
			case e.IsDir():
				if m.skipped(name) {
					continue
				}
				if err := walk(p); err != nil {
					return err
				}
			case m.masked(name):
				if e.Type()&fs.ModeSymlink == 0 {
					out = append(out, p)
					continue
				}
				// A masked name that is a symlink: mask what it points to when that is a
				// file in the project (anything outside is not visible anyway).
				t, err := pr.EvalSymlinks(p)
				if err != nil || !isolator.Within(t, root) {
					continue
				}
				if fi, err := pr.Stat(t); err == nil && fi.Mode().IsRegular() {
					out = append(out, t)
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return out, nil
}
