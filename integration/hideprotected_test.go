//go:build integration

package integration

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Guarantee 1: a hidden directory appears empty and cannot be written through even
// when it holds files host tools run, which are otherwise bound read-only (with their
// directories as mount points): .cursor/mcp.json, a rust-toolchain.toml below a
// sub-directory, a file the git config includes. Those protections must not be placed
// over the mask and show the host's directory. A hidden protected file is empty, and a
// file hidden below a protected directory stays hidden. In a read-write and a
// read-only project alike.
func TestHideProtected(t *testing.T) {
	files := map[string]string{
		".cursor/mcp.json":             `{"bait": "HIDE-BAIT-mcp"}` + "\n",
		".cursor/secret":               "HIDE-BAIT-cursor-secret\n",
		".cursor/.env":                 "HIDE-BAIT-env\n",
		"crates/a/rust-toolchain.toml": "# HIDE-BAIT-toolchain\n",
		"gitinc/w/extra":               "# HIDE-BAIT-gitinc\n",
		".envrc":                       "# HIDE-BAIT-envrc\n",
		".claude/secret":               "HIDE-BAIT-claude-secret\n",
		".claude/settings.json":        `{"shown": 1}` + "\n",
	}
	hiddenDirs := []string{".cursor", "crates", "gitinc"}
	hide := append(slices.Clone(hiddenDirs), ".envrc", ".claude/secret")
	script := ""
	for _, d := range hiddenDirs {
		script += fmt.Sprintf("ls -A %s | sed 's|^|LISTED %s/|'; touch %s/new 2>/dev/null && echo NEW %s; mkdir %s/newdir 2>/dev/null && echo MKDIR %s; umount %s 2>/dev/null && echo UNMOUNTED %s; mv %s %s.moved 2>/dev/null && echo RENAMED %s; ",
			d, d, d, d, d, d, d, d, d, d, d)
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		script += fmt.Sprintf("cat %s 2>/dev/null; ", f)
	}
	script += "true"
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) { hideProtectedOn(t, iso, home, files, hiddenDirs, hide, script) })
	})
}

func hideProtectedOn(t *testing.T, iso, home string, files map[string]string, hiddenDirs, hide []string, script string) {
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"read-write", nil}, {"read-only", []string{"--read-only"}}} {
		t.Run(mode.name, func(t *testing.T) {
			p := newProject(t)
			for f, content := range files {
				p.write("proj/"+f, content)
			}
			p.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[include]\n\tpath = ../gitinc/w/extra\n")
			config := "[sandbox]\nhide_paths = ["
			for i, h := range hide {
				if i > 0 {
					config += ", "
				}
				config += fmt.Sprintf("%q", p.path("proj/"+h))
			}
			flags := append([]string{"--egress=none", "--config", p.writeConfigHome(iso, "hide.toml", config+"]\n", home)}, mode.flags...)
			r := p.sandbox(iso, flags, script)
			if refusesAnchors(iso) && mode.flags == nil {
				// .claude/secret is masked below a directory of the read-write project.
				wantAnchorsRefused(t, r)
				return
			}
			if r.code != 0 || r.stdout != files[".claude/settings.json"] {
				t.Errorf("hidden paths shown or writable in the sandbox: got\n%s\nwant stdout %q", r, files[".claude/settings.json"])
			}
			for f, content := range files {
				if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != content {
					t.Errorf("%s on the host: %q, %v", f, b, err)
				}
			}
			for _, d := range hiddenDirs {
				err := filepath.WalkDir(p.path("proj/"+d), func(path string, e os.DirEntry, err error) error {
					if err != nil {
						return err
					}
					rel, _ := filepath.Rel(p.dir, path)
					if _, ok := files[rel]; !ok && !e.IsDir() || filepath.Base(rel) == "newdir" {
						t.Errorf("the sandbox created %s on the host", rel)
					}
					return nil
				})
				if err != nil {
					t.Errorf("%s on the host: %v", d, err)
				}
			}
		})
	}
}
