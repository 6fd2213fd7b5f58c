package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/tools"
)

// configWritable is config.LoadOptions.Writable for a run of the project projectDir
// ("" outside any), with th the host the tools are probed on: what a sandbox can
// write, for a --config file's sake. That is this run's sandbox's own (the project
// and sandboxWritable of the loaded configuration, the list Build binds from) and,
// asked only for a path none of those holds, every other project devsandbox has run
// (recordedProjects): their sandboxes write them.
func configWritable(reg *tools.Registry, th tools.Host, projectDir string) func(*config.Config) config.WritableCheck {
	return func(cfg *config.Config) config.WritableCheck {
		var own []tools.WritablePath
		if projectDir != "" {
			own = append(own, tools.WritablePath{Path: projectDir, Why: "the project"})
		}
		own = append(own, sandboxWritable(cfg, reg, th)...)
		var others []tools.WritablePath
		read := false
		return func(p string) (string, bool) {
			for _, w := range own {
				if w.Holds(p) {
					return fmt.Sprintf("it lies in %s: %s", w.Path, w.Why), true
				}
			}
			if !read {
				others, read = recordedProjects(cfg.Host, projectDir), true
			}
			for _, w := range others {
				if w.Holds(p) {
					return fmt.Sprintf("it lies in %s: %s", w.Path, w.Why), true
				}
			}
			return "", false
		}
	}
}

// maxProjectRecord bounds the file recording a sandbox's project (a path and a newline).
const maxProjectRecord = 1 << 12

// recordedProjects are the directories of the projects devsandbox has run but
// current, from the records beside their sandbox homes (isolator.RecordProject). A
// record that cannot be read is skipped: it only ever adds a directory that needs
// trust.
func recordedProjects(h config.Host, current string) []tools.WritablePath {
	data := filepath.Join(h.DataHome, "devsandbox")
	entries, err := os.ReadDir(data)
	if err != nil {
		return nil
	}
	var out []tools.WritablePath
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := rawfile.ReadRegular(filepath.Join(data, e.Name(), "project"), maxProjectRecord, false)
		dir := strings.TrimSuffix(string(b), "\n")
		if err != nil || !filepath.IsAbs(dir) || dir != filepath.Clean(dir) || dir == current || dir == "/" {
			continue
		}
		out = append(out, tools.WritablePath{Path: dir, Why: "another project devsandbox has run (" + e.Name() + "), whose sandbox can write it"})
	}
	return out
}
