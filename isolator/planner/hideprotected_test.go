package planner

import (
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestBuildHideProtected: a hide_paths entry in the project wins over the protection
// of the files host tools run below it. No read-only bind of such a file, no mount
// point of its directory, no git include or core.hooksPath, no mask_files mask is
// placed behind the mask: each would show the host's path (a mount point of the
// mask's mode, read-write) in a directory the user asked to hide. Before, .cursor,
// gitinc and gitinc/sub were bound read-write over their masks. A mask below a
// protected directory (.claude/secret) stays on top of that directory's mount point,
// and a hidden protected file (.envrc) is masked, not bound.
func TestBuildHideProtected(t *testing.T) {
	for _, c := range []struct {
		name     string
		readOnly bool
		want     []string
	}{
		{"read-write", false, []string{
			"bind rw $PROJ -> $PROJ (project)",
			"bind rw $PROJ/.claude -> $PROJ/.claude (holds a masked or protected path)",
			"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
			"maskdir ~/src/app/.cursor (sandbox.hide_paths)",
			"maskdir $PROJ/.cursor (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/crates (sandbox.hide_paths)",
			"maskdir $PROJ/crates (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/gitinc (sandbox.hide_paths)",
			"maskdir $PROJ/gitinc (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/hooks (sandbox.hide_paths)",
			"maskdir $PROJ/hooks (sandbox.hide_paths (at its host path))",
			"maskfile ~/src/app/.envrc (sandbox.hide_paths)",
			"maskfile $PROJ/.envrc (sandbox.hide_paths (at its host path))",
			"maskfile ~/src/app/.claude/secret (sandbox.hide_paths)",
			"maskfile $PROJ/.claude/secret (sandbox.hide_paths (at its host path))",
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind ro $PROJ/.claude/settings.json -> $PROJ/.claude/settings.json (run by tools on the host)",
			"maskfile $PROJ/.env (sandbox.mask_files)",
		}},
		{"read-only", true, []string{
			"bind ro $PROJ -> $PROJ (project (read-only))",
			"bind ro $PROJ/.claude -> $PROJ/.claude (holds files run by tools on the host)",
			"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
			"maskdir ~/src/app/.cursor (sandbox.hide_paths)",
			"maskdir $PROJ/.cursor (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/crates (sandbox.hide_paths)",
			"maskdir $PROJ/crates (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/gitinc (sandbox.hide_paths)",
			"maskdir $PROJ/gitinc (sandbox.hide_paths (at its host path))",
			"maskdir ~/src/app/hooks (sandbox.hide_paths)",
			"maskdir $PROJ/hooks (sandbox.hide_paths (at its host path))",
			"maskfile ~/src/app/.envrc (sandbox.hide_paths)",
			"maskfile $PROJ/.envrc (sandbox.hide_paths (at its host path))",
			"maskfile ~/src/app/.claude/secret (sandbox.hide_paths)",
			"maskfile $PROJ/.claude/secret (sandbox.hide_paths (at its host path))",
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind ro $PROJ/.claude/settings.json -> $PROJ/.claude/settings.json (run by tools on the host)",
			"maskfile $PROJ/.env (sandbox.mask_files)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			gitRepo(t, f.proj)
			writeFile(t, f.proj+"/.git/config", "[core]\n\thooksPath = hooks\n[include]\n\tpath = ../gitinc/sub/extra\n")
			writeFile(t, f.proj+"/gitinc/sub/extra", "[user]\n")
			writeFile(t, f.proj+"/hooks/pre-commit", "#!/bin/sh\n")
			writeFile(t, f.proj+"/.cursor/mcp.json", "{}\n")
			writeFile(t, f.proj+"/.cursor/.env", "A=1\n")
			writeFile(t, f.proj+"/crates/a/rust-toolchain.toml", "[toolchain]\n")
			writeFile(t, f.proj+"/.envrc", "export A=1\n")
			writeFile(t, f.proj+"/.claude/settings.json", "{}\n")
			writeFile(t, f.proj+"/.claude/secret", "s\n")
			writeFile(t, f.proj+"/.env", "A=1\n")
			cfg := f.load(t)
			cfg.Sandbox.ReadOnly = c.readOnly
			cfg.Sandbox.HidePaths = nil
			for _, h := range []string{".cursor", "crates", "gitinc", "hooks", ".envrc", ".claude/secret"} {
				cfg.Sandbox.HidePaths = append(cfg.Sandbox.HidePaths, f.proj+"/"+h)
			}
			p, _ := f.build(t, cfg)
			equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts, c.want...)...))
		})
	}
}

// TestAddMountPointOnce: a directory bound onto itself already, in the mode its mount
// point would take, is not bound again; an optional bind of it (left out at launch
// when its source is gone) does not count, nor does a bind of another source.
func TestAddMountPointOnce(t *testing.T) {
	const d = "/p/proj/.cursor"
	for _, c := range []struct {
		name  string
		first isolator.Mount
		want  int // binds at d after addMountPoint
	}{
		{"anchor", isolator.Mount{Kind: isolator.Bind, Source: d, Dest: d, Why: anchorWhy, Anchor: true}, 1},
		{"writable_dirs", isolator.Mount{Kind: isolator.Bind, Source: d, Dest: d, Why: "sandbox.writable_dirs"}, 1},
		{"optional", isolator.Mount{Kind: isolator.Bind, Source: d, Dest: d, Why: "x", Optional: true}, 2},
		{"other source", isolator.Mount{Kind: isolator.Bind, Source: "/elsewhere", Dest: d, Why: "x"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &mountBuilder{home: "/h", mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/p/proj", Dest: "/p/proj", Why: "project"},
				c.first,
			}}
			b.addMountPoint(d, parentWhy)
			n := 0
			for _, m := range b.mounts {
				if m.Kind == isolator.Bind && m.Dest == d {
					n++
				}
			}
			if n != c.want {
				t.Errorf("%d binds at %s, want %d: %+v", n, d, c.want, b.mounts)
			}
		})
	}
}
