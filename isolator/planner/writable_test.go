package planner

import (
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// TestSandboxWritableCoversPlan: what ToolKeys takes the sandbox to be able to write
// (sandboxWritable, worked out before Build) covers every directory the Plan Build
// makes gives it to write (isolator.Writable), but the project, which ToolKeys
// refuses on its own: a tool's configuration file in any of them is not followed.
func TestSandboxWritableCoversPlan(t *testing.T) {
	for _, tmp := range []string{"session", "shm"} {
		t.Run(tmp, func(t *testing.T) {
			f := newFixture(t)
			mkdirs(t, f.root+"/rw", f.root+"/mnt", f.home+"/.codex", f.home+"/.claude", f.home+"/.gemini", f.home+"/.cache")
			writeFile(t, f.home+"/.codex/auth.json", "{}")
			writeFile(t, f.home+"/.config/devsandbox/config.toml", f.expand(nil, `[sandbox]
rw_binds = ["$ROOT/rw"]
host_mounts = ["$ROOT/mnt:/mnt/x"]
bind_host_cache = true
tmp = "`+tmp+`"
[tools.codex]
enabled = true
[tools.claude]
enabled = true
[tools.gemini]
enabled = true
`)[0])
			cfg := f.load(t)
			p, _ := f.build(t, cfg)
			got := sandboxWritable(cfg, tools.Default(), ToolHost(cfg.Host, probe(f.proj), f.proj))
			for _, r := range isolator.Writable(p) {
				if r == "" || r == p.Project.Dir {
					continue
				}
				covered := false
				for _, w := range got {
					covered = covered || w.Holds(r)
				}
				if !covered {
					t.Errorf("the plan lets the sandbox write %s, which sandboxWritable does not list: %+v", r, got)
				}
			}
		})
	}
}
