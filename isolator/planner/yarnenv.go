package planner

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// The host user's environment changes what yarn (berry, 2+) reads and runs, in
// every project directory (berry's Configuration: getRcFilename,
// getEnvironmentSettings, its plugin import). A variable's name is matched in any
// case (yarn lowercases it):
//   - YARN_RC_FILENAME replaces .yarnrc.yml as the rc file name: yarn reads
//     ppath.join(d, name) for each directory d from where it runs up to /, so an
//     absolute name is one below every directory too.
//   - YARN_YARN_PATH is yarnPath: the release every yarn command runs instead of
//     itself, ahead of any rc file's.
//   - YARN_PLUGINS is a ';'-separated list of plugin files every yarn command loads.
//
// Both paths are resolved from the directory yarn runs in. Yarn 1 (classic) reads
// none of them: its yarn-path comes from .yarnrc files and --use-yarnrc only.

// yarnEnv is what the yarn variables of an environment make yarn read or run in the
// project (yarnEnvNames).
type yarnEnv struct {
	// rc are the project-relative rc file names (YARN_RC_FILENAME): read in every
	// directory, and the files they name are protected as a .yarnrc.yml's are.
	rc []string
	// run are the relative paths of YARN_YARN_PATH and YARN_PLUGINS: the file under
	// that name below any directory yarn runs in.
	run []string
	// top are their absolute paths inside the project, project-relative.
	top   []string
	warns []string
}

// names returns every project-relative name e adds, for the top directory.
func (e yarnEnv) names() []string { return slices.Concat(e.rc, e.run, e.top) }

// yarnEnvNames returns what vars' yarn variables make yarn read or run in the project
// dir, each list sorted, and warnings for values that cannot be protected. Without
// such a variable it allocates nothing.
func yarnEnvNames(vars map[string]string, dir string) yarnEnv {
	var e yarnEnv
	for k, v := range vars {
		if len(k) < 5 || !strings.EqualFold(k[:5], "YARN_") || v == "" {
			continue
		}
		switch {
		case strings.EqualFold(k, "YARN_RC_FILENAME"):
			rel := path.Clean(strings.TrimLeft(v, "/")) // joined to each directory, as ppath.join
			if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				e.warns = append(e.warns, fmt.Sprintf("%s names %q, which yarn reads outside each directory it runs in: devsandbox cannot keep the sandbox from writing it; use a plain file name", k, v))
				continue
			}
			e.rc = appendNew(e.rc, rel)
		case strings.EqualFold(k, "YARN_YARN_PATH"):
			e.addRun(k, v, dir)
		case strings.EqualFold(k, "YARN_PLUGINS"):
			for _, p := range strings.Split(v, ";") {
				if p != "" {
					e.addRun(k, p, dir)
				}
			}
		}
	}
	slices.Sort(e.rc)
	slices.Sort(e.run)
	slices.Sort(e.top)
	return e
}

// addRun adds a file yarn runs, named by the variable k as p.
func (e *yarnEnv) addRun(k, p, dir string) {
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		if isolator.Within(c, dir) && c != dir {
			rel, _ := filepath.Rel(dir, c)
			e.top = appendNew(e.top, rel)
		}
		return // outside the project: not devsandbox's to protect
	}
	rel := filepath.Clean(p)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		e.warns = append(e.warns, fmt.Sprintf("%s names %q, which yarn resolves outside the directory it runs in: devsandbox cannot keep the sandbox from writing it; use an absolute path", k, p))
		return
	}
	e.run = appendNew(e.run, rel)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// yarnRCBase returns the directory f, a project file, is an rc file of yarn's for
// (where yarn found it: the files it names are resolved from there), and whether it
// is one: .yarnrc.yml, .yarnrc (yarn 1's; yml false) or a YARN_RC_FILENAME name.
func (b *mountBuilder) yarnRCBase(f string) (base string, yml, ok bool) {
	if n := filepath.Base(f); yarnRCNames[n] {
		return filepath.Dir(f), n == ".yarnrc.yml", true
	}
	for _, n := range b.yarnRC {
		if strings.HasSuffix(f, "/"+n) {
			return strings.TrimSuffix(f, "/"+n), true, true
		}
	}
	return "", false, false
}
