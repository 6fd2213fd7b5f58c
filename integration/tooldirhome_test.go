//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A tool's variable naming its directory below the home (CLAUDE_CONFIG_DIR) names, in
// the sandbox, where the tool's bindings put the directory: below the containers' home
// when that is elsewhere than the host home (docker.home on macOS), where the host
// path shows nothing. The tool reads its files there and continues the project's
// session (state it shares with the host) in the host's directory.
func TestToolVarBelowHome(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		forEachContainerHome(t, func(t *testing.T, home string) {
			p := newProject(t)
			session := "claude-work/projects/" + claudeKey(p.dir) + "/s1.jsonl"
			p.write("claude-work/settings.json", claudeSettings)
			p.write(session, `{"type":"user","cwd":"`+p.dir+`","sessionId":"s1","message":"HOST-TURN"}`+"\n")
			dir := p.path("claude-work")
			rel, _ := filepath.Rel(it.home, dir)
			in := filepath.Join(home, rel)
			if iso == "bwrap" {
				in = dir
			}
			cfg := p.writeConfigHome(iso, "claude.toml", "[tools.claude]\nenabled = true\n", home)
			script := `echo "$CLAUDE_CONFIG_DIR"; cat "$CLAUDE_CONFIG_DIR/settings.json" &&
				echo SANDBOX-TURN >> "$CLAUDE_CONFIG_DIR/projects/` + claudeKey(p.dir) + `/s1.jsonl" && echo end`
			r := run(t, p.dir, []string{"CLAUDE_CONFIG_DIR=" + dir}, "", "--isolator="+iso, "--egress=none", "--config", cfg, "--", "/bin/sh", "-c", script)
			if want := in + "\n" + claudeSettings + "end\n"; r.code != 0 || r.stdout != want {
				t.Errorf("CLAUDE_CONFIG_DIR=%s: want stdout %q\n%s", dir, want, r)
			}
			if b, err := os.ReadFile(p.path(session)); err != nil || !strings.HasSuffix(string(b), "\nSANDBOX-TURN\n") {
				t.Errorf("the session on the host: %q, %v", b, err)
			}
		})
	})
}
