//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// A tool's directory that a user's bind also shows (rw_binds = ["~/.claude"]) is at two
// places in a container whose home is elsewhere than the host home: in the sandbox home,
// where the tool's bindings land, and at its host path, where the bind shows it. What
// protects it at one place must hold at the other: the tool's read-only guard on
// settings.json (hooks and commands the host's Claude Code runs), and the mask of a
// proxy.credentials value_file kept in that directory.
const claudeSettings = `{"hooks": {}}` + "\n"

// toolDirBoth writes ~/.claude (settings.json and more), removed at the test's end, and
// returns the config of a run with the claude tool and ~/.claude bound read-write, plus
// extra.
func toolDirBoth(t *testing.T, p *project, iso, home, extra string) string {
	t.Helper()
	dir := filepath.Join(it.home, ".claude")
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("%s exists in the test user's home; remove it", dir)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	writeHome(t, ".claude/settings.json", claudeSettings)
	writeHome(t, ".claude/keys/token", hideSecret+"\n")
	return p.writeConfigHome(iso, "claude.toml", "[tools.claude]\nenabled = true\n[sandbox]\nrw_binds = [\"~/.claude\"]\n"+extra, home)
}

// Guarantee 1 (a tool's guards): settings.json cannot be written from inside, neither in
// the sandbox home nor at its host path, and the host's file is unchanged.
func TestToolGuardAtBothHomes(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) {
			p := newProject(t)
			cfg := toolDirBoth(t, p, iso, home, "")
			script := ""
			for _, q := range []string{sh.Quote(filepath.Join(it.home, ".claude")), `"$HOME"/.claude`} {
				script += fmt.Sprintf("printf planted > %s/settings.json 2>/dev/null && echo WROTE %s; cat %s/settings.json; ", q, q, q)
			}
			script += "echo end"
			r := p.sandbox(iso, []string{"--egress=none", "--config", cfg}, script)
			if refusesAnchors(iso) && r.code == 125 {
				wantAnchorsRefused(t, r) // the guard lies below a directory of a read-write bind
				return
			}
			if want := claudeSettings + claudeSettings + "end\n"; r.code != 0 || r.stdout != want {
				t.Errorf("settings.json writable or not shown at one of its places: got\n%s\nwant stdout %q", r, want)
			}
			if b, err := os.ReadFile(filepath.Join(it.home, ".claude/settings.json")); err != nil || string(b) != claudeSettings {
				t.Errorf("settings.json on the host: %q, %v", b, err)
			}
		})
	})
}

// Guarantee 1 (masks) the other way round: a proxy.credentials value_file in ~/.claude,
// masked at its host path, is masked in the sandbox home too, where the container shows
// the directory again.
func TestValueFileInToolDirAtBothHomes(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) {
			p := newProject(t)
			cfg := toolDirBoth(t, p, iso, home, "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"api.example.test\"\n"+
				"header = \"Authorization\"\nvalue_file = \"~/.claude/keys/token\"\n")
			host := sh.Quote(filepath.Join(it.home, ".claude/keys/token"))
			script := fmt.Sprintf(`cat %s "$HOME"/.claude/keys/token 2>/dev/null; grep -rs %s %s "$HOME"/.claude; echo end`,
				host, hideSecret, sh.Quote(filepath.Join(it.home, ".claude")))
			r := p.sandbox(iso, []string{"--egress=proxy", "--config", cfg}, script)
			if refusesAnchors(iso) && r.code == 125 {
				wantAnchorsRefused(t, r) // the mask lies below a directory of a read-write bind
				return
			}
			if r.code != 0 || r.stdout != "end\n" {
				t.Errorf("the value file is shown at one of its places: got\n%s\nwant stdout %q", r, "end\n")
			}
		})
	})
}
