package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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
// through a stat cache as Build's) is paid only then, and when pr carries a toolShare
// (LoadDir), Build reuses that work instead of doing it again.
func configWritable(reg *tools.Registry, pr Probe, projectDir string) func(*config.Config) config.WritableCheck {
	return func(cfg *config.Config) config.WritableCheck {
		probe, own := checkWritable(cfg, reg, pr, projectDir)
		var prot []protected // worked out when a user's bind holds the file
		return func(p string) (string, bool) {
			for _, w := range own {
				if !w.Holds(p) {
					continue
				}
				if w.UserBind && prot == nil {
					prot = protectedPaths(cfg, cfg.Host, probe)
				}
				if !maskedIn(p, w, prot) {
					return fmt.Sprintf("it lies in %s: %s", w.Path, w.Why), true
				}
			}
			if dir, name := otherProject(p, cfg.Host); dir != "" {
				return fmt.Sprintf("it lies in %s: another project devsandbox has run (%s), whose sandbox can write it", dir, name), true
			}
			return "", false
		}
	}
}

// checkWritable is the list configWritable checks a --config file against: the
// project and sandboxWritable, with the tools seen as Build sees them (the same ssh
// ProxyCommand, so the same bindings), through pr's toolShare when it carries one
// for this host and project. It returns the probe it asked through.
func checkWritable(cfg *config.Config, reg *tools.Registry, pr Probe, projectDir string) (Probe, []tools.WritablePath) {
	probe := pr
	if probe.osLinks {
		if pr.share.statsFor(cfg.Host, projectDir) != nil {
			probe = pr.share.withStats(probe, cfg.Host)
		} else {
			probe = withStats(probe, newStatCache(probe.Lstat, probe.Stat), cfg.Host)
		}
	}
	th := ToolHost(cfg.Host, probe, projectDir)
	th.ProxyCommand = sshProxyCommand(cfg)
	var own []tools.WritablePath
	if projectDir != "" {
		own = append(own, tools.WritablePath{Path: projectDir, Why: "the project"})
	}
	return probe, append(own, sandboxWritable(cfg, reg, th)...)
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

// otherProject returns the directory above p (or p) that is a project devsandbox
// has run on the host h, and that name; "" when none is. A project devsandbox has run
// keeps its sandbox home in the directory of its name (projectName) in devsandbox's
// data directory. The name is worked out from each directory's path (a hash, no file
// read) and looked for there with one lstat(2) each (no listing of every project),
// so a project is recognised by its real path, as its runs name it. An entry that
// cannot be told absent counts: more files then need trust, never fewer.
func otherProject(p string, h config.Host) (dir, name string) {
	data := filepath.Join(h.DataHome, "devsandbox")
	for d := filepath.Dir(p); d != "/" && d != "." && filepath.IsAbs(d); d = filepath.Dir(d) {
		_, n := projectName(d)
		fi, err := os.Lstat(filepath.Join(data, n))
		if err == nil && fi.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return d, n
		}
	}
	return "", ""
}
