package planner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// configWritable is config.LoadOptions.Writable for a run of the project projectDir
// ("" outside any), with the tools probed on pr: what a sandbox can write, for a
// --config file's sake. That is this run's sandbox's own (the project and
// sandboxWritable of the loaded configuration, the list Build binds from) and, asked
// only for a path none of those holds, every other project devsandbox has run
// (otherProject): their sandboxes write them. It is asked only for a --config file
// on disk that is not trusted, so its probing (the tools' detection and bindings,
// through a stat cache as Build's, and the mount table, read once and only for a path
// no bind holds: byMounts) is paid only then.
func configWritable(reg *tools.Registry, pr Probe, projectDir string) func(*config.Config) config.WritableCheck {
	return func(cfg *config.Config) config.WritableCheck {
		probe := pr
		if probe.osLinks {
			probe = withStats(probe, newStatCache(probe.Lstat, probe.Stat), cfg.Host)
		}
		th := ToolHost(cfg.Host, probe, projectDir)
		var own []tools.WritablePath
		if projectDir != "" {
			own = append(own, tools.WritablePath{Path: projectDir, Why: "the project"})
		}
		own = append(own, sandboxWritable(cfg, reg, th)...)
		prot := protectedPaths(cfg, cfg.Host, probe)
		var known map[string]bool
		byPath := func(p string) (string, bool) {
			for _, w := range own {
				if w.Holds(p) && !maskedIn(p, w, prot) {
					return fmt.Sprintf("it lies in %s: %s", w.Path, w.Why), true
				}
			}
			if known == nil {
				known = dataNames(cfg.Host)
			}
			if dir, name := otherProject(p, known); dir != "" {
				return fmt.Sprintf("it lies in %s: another project devsandbox has run (%s), whose sandbox can write it", dir, name), true
			}
			return "", false
		}
		var mounts mountTable
		var mountsErr error
		read := false
		return func(p string) (string, bool) {
			if why, ok := byPath(p); ok {
				return why, true
			}
			if mountInfoPath == "" {
				return "", false // no mount table to ask (not Linux)
			}
			if !read {
				read = true
				var b []byte
				if b, mountsErr = probe.ReadFile(mountInfoPath); mountsErr == nil {
					mounts = parseMountInfo(b)
				}
			}
			return byMounts(p, mounts, mountsErr, byPath)
		}
	}
}

// byMounts is configWritable's verdict on p from the mount table, which a path alone
// does not tell: a file bound onto p shows its source's content, and a directory
// bound onto one above p makes p another name of a file below the bind's source (a
// project's directory bound elsewhere). A mount point needs trust whatever its source
// (a source in another namespace, or hidden by another mount, is not found here); an
// alias needs it when byPath says a sandbox can write it. A table that cannot be read
// (err) decides nothing: the file needs trust.
func byMounts(p string, mounts mountTable, err error, byPath func(string) (string, bool)) (string, bool) {
	if err != nil {
		return fmt.Sprintf("the mount table (%s) cannot be read (%v), so whether a mount shows it from where a sandbox can write is unknown", mountInfoPath, err), true
	}
	if mounts.isMountPoint(p) {
		return "it is a mount point: a file bound onto its path shows what its source holds, and the source may lie where a sandbox can write it", true
	}
	for _, a := range mounts.aliases(p) {
		if why, ok := byPath(a.path); ok {
			return fmt.Sprintf("it is also %s (%s): %s", a.path, a.how, why), true
		}
	}
	return "", false
}

// maskedIn reports whether p lies in a protected path that the user's bind w holds
// below its own root: the bind masks it there (maskUserBinds), so p is not the
// sandbox's to write through w (devsandbox's own configuration directory in a bind of
// ~/.config, a hidden path in a bound directory).
func maskedIn(p string, w tools.WritablePath, prot []protected) bool {
	if !w.UserBind {
		return false
	}
	for _, q := range prot {
		for _, d := range []string{q.path, q.real} {
			if d != w.Path && w.Holds(d) && isolator.Within(p, d) {
				return true
			}
		}
	}
	return false
}

// dataNames are the names in devsandbox's data directory: the projects devsandbox
// has run keep their sandbox home in the directory of their name (projectName). It
// is never nil.
func dataNames(h config.Host) map[string]bool {
	known := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(h.DataHome, "devsandbox"))
	if err != nil {
		return known
	}
	for _, e := range entries {
		if e.IsDir() {
			known[e.Name()] = true
		}
	}
	return known
}

// otherProject returns the directory above p (or p) that is a project devsandbox
// has run, by the names in its data directory (known), and that name; "" when
// none is. The project's name is worked out from each directory's path (a hash,
// no file read), so a project is recognised by its real path, as its runs name
// it.
func otherProject(p string, known map[string]bool) (dir, name string) {
	if len(known) == 0 {
		return "", ""
	}
	for d := filepath.Dir(p); d != "/" && d != "." && filepath.IsAbs(d); d = filepath.Dir(d) {
		if _, n := projectName(d); known[n] {
			return d, n
		}
	}
	return "", ""
}
