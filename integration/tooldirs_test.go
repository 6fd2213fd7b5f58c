//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// toolDir is one of a tool's own directories shared with the host, as a test sets it
// up: where it lives, the variable naming it (none: the default place under the test
// user's home), and what the host's tool loads from it and so must never take from
// the sandbox (researched from each tool's documentation and source).
type toolDir struct {
	tool  string
	env   string // CLAUDE_CONFIG_DIR, CODEX_HOME; "" for the default place
	rel   string // below the home when env is ""
	loads []string
}

var toolDirs = []toolDir{
	{tool: "claude", env: "CLAUDE_CONFIG_DIR", loads: []string{
		"settings.json", "settings.local.json", ".config.json", ".claude.json", "CLAUDE.md",
		"commands/x.md", "agents/x.md", "skills/x/SKILL.md", "output-styles/x.md", "rules/x.md", "hooks/x.sh",
		"plugins/installed_plugins.json", "plugins/known_marketplaces.json", "plugins/cache/x/plugin.json",
		"workflows/x.md", "shell-snapshots/snapshot-bash-1.sh", "jobs/x.json", "daemon.json", "keybindings.json",
		"local/claude", "projects/-other-project/memory/MEMORY.md", "remote-settings.json", "policy-limits.json",
		"managed-settings.json", "ide/1.lock", "history.jsonl",
	}},
	{tool: "codex", env: "CODEX_HOME", loads: []string{
		"config.toml", ".env", "AGENTS.md", "AGENTS.override.md", "prompts/x.md", "rules/default.rules",
		"skills/x/SKILL.md", "plugins/x/plugin.json", "profiles/x.toml", "hooks.json", "shell_snapshots/x.sh",
		"sessions/2026/01/01/rollout-x.jsonl", "memories/x.md", "history.jsonl",
	}},
	{tool: "gemini", rel: ".gemini", loads: []string{
		"settings.json", ".env", "GEMINI.md", "commands/x.toml", "extensions/x/gemini-extension.json",
		"policies/x.toml", "history/abc/.git/config", "tmp/abc/checkpoints/x.json", "trustedFolders.json",
		"mcp-oauth-tokens.json",
	}},
	{tool: "opencode", rel: ".local/share/opencode", loads: []string{
		"snapshot/abc/def/config", "snapshot/abc/def/hooks/pre-commit", "bin/x", "storage/session/x.json",
		"auth.json", "mcp-auth.json", "log/x.log",
	}},
	{tool: "copilot", env: "COPILOT_HOME", loads: []string{
		"settings.json", "config.json", "mcp-config.json", "lsp-config.json", "permissions-config.json",
		"copilot-instructions.md", "instructions/x.instructions.md", "agents/x.md", "skills/x/SKILL.md", "hooks/x.sh",
		"installed-plugins/x/plugin.json", "plugin-data/x/data.json", "session-state/x/events.jsonl", "session-store.db",
	}},
	{tool: "cursor", env: "CURSOR_CONFIG_DIR", loads: []string{
		"cli-config.json", "mcp.json", "hooks.json", "rules/x.mdc", "commands/x.md", "extensions/x/package.json",
		"chats/x/store.db", "projects/x/agent-transcripts/x.jsonl",
	}},
	{tool: "pi", env: "PI_CODING_AGENT_DIR", loads: []string{
		"settings.json", "models.json", "mcp.json", "auth.json", "keybindings.json", "AGENTS.md", "SYSTEM.md",
		"APPEND_SYSTEM.md", "extensions/x.ts", "skills/x/SKILL.md", "prompts/x.md", "themes/x.json", "trust.json",
		"sessions/x/y.jsonl",
	}},
	{tool: "qwen", rel: ".qwen", loads: []string{
		"settings.json", ".env", "QWEN.md", "memory.md", "commands/x.toml", "skills/x/SKILL.md",
		"extensions/x/qwen-extension.json", "bin/rg", "tmp/x/shell_history", "history/x/.git/config", "installation_id",
		"mcp-oauth-tokens.json",
	}},
	{tool: "amp", rel: ".local/share/amp", loads: []string{"secrets.json", "threads/T-x.json"}},
	{tool: "amp-config", rel: ".config/amp", loads: []string{"settings.json", "AGENTS.md", "skills/x/SKILL.md"}},
	{tool: "goose", rel: ".config/goose", loads: []string{
		"config.yaml", "permission.yaml", "secrets.yaml", "permissions/tool_permissions.json", "prompts/x.md",
		".goosehints", "history.txt",
	}},
	{tool: "crush", rel: ".config/crush", loads: []string{"crush.json", "crushrc"}},
}

// dir returns the host directory of d for project p, and the variables that name it.
func (d toolDir) dir(p *project) (string, []string) {
	if d.env == "" {
		return filepath.Join(it.home, d.rel), nil
	}
	dir := p.path(d.tool)
	return dir, []string{d.env + "=" + dir}
}

// treeOf returns every path below dir with its content's hash (links: their target).
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case e.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(sum[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if before[k] != v {
			d = append(d, k+": "+before[k]+" -> "+v)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, k+": removed")
		}
	}
	sort.Strings(d)
	return d
}

// Every name a host tool runs or obeys, created from inside the sandbox (a file, and
// a link to the Docker socket), leaves the host's directory unchanged; the state the
// tool shares with the host on purpose (its token) is shared.
func TestToolDirsKeepHostCopy(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		var env []string
		var script strings.Builder
		script.WriteString("set +e\n")
		before := map[string]map[string]string{}
		for _, d := range toolDirs {
			dir, vars := d.dir(p)
			env = append(env, vars...)
			if d.env == "" {
				if _, err := os.Lstat(dir); err == nil {
					t.Fatalf("%s exists in the test user's home; remove it", dir)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
			}
			// The host has some configuration and a token.
			writeHome(t, strings.TrimPrefix(dir, it.home+"/")+"/commands/mine.md", "the user's command\n")
			writeHome(t, strings.TrimPrefix(dir, it.home+"/")+"/token.json", "host token\n")
			before[d.tool] = treeOf(t, dir)
			for _, n := range d.loads {
				in := "$HOME/" + strings.TrimPrefix(dir, it.home+"/") + "/" + n
				script.WriteString(`mkdir -p "$(dirname "` + in + `")" 2>/dev/null; printf planted > "` + in + `" 2>/dev/null` + "\n")
			}
			in := "$HOME/" + strings.TrimPrefix(dir, it.home+"/")
			script.WriteString(`ln -s /run/docker.sock "` + in + `/AGENTS.override.md" 2>/dev/null; ln -s /run/docker.sock "` + in + `/local2" 2>/dev/null` + "\n")
			script.WriteString(`printf sandbox > "` + in + `/commands/mine.md" 2>/dev/null && echo WROTE ` + d.tool + "\n")
		}
		script.WriteString("true\n")
		r := run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", script.String())
		if r.code != 0 || strings.Contains(r.stdout, "WROTE") {
			t.Fatalf("run:\n%s", r)
		}
		for _, d := range toolDirs {
			dir, _ := d.dir(p)
			after := treeOf(t, dir)
			if d.tool == "claude" {
				// This project's sessions are shared: the directory is made for them.
				key := strings.Map(func(r rune) rune {
					if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
						return r
					}
					return '-'
				}, p.dir)
				if after["projects/"+key] != "dir" {
					t.Errorf("claude: this project's sessions directory was not shared: %v", after)
				}
				delete(after, "projects")
				delete(after, "projects/"+key)
				// The sandbox's own memory/ is mounted over the shared folder's: its
				// mount point may be made there, empty (anything in it is still a change).
				if after["projects/"+key+"/memory"] == "dir" {
					delete(after, "projects/"+key+"/memory")
				}
			}
			if diff := diffTrees(before[d.tool], after); len(diff) > 0 {
				t.Errorf("%s: the sandbox changed the host's %s:\n\t%s", d.tool, dir, strings.Join(diff, "\n\t"))
			}
		}
	})
}

// Links planted in a tool's directory on the host (by a sandbox before, or by anyone)
// are never followed into the sandbox: neither an absolute link to the Docker socket
// nor a relative one to a directory the sandbox must not see. Each is reported.
func TestToolDirPlantedLinksNotFollowed(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("secret/id_ed25519", "PRIVATE-KEY-BAIT\n")
		p.write("claude/settings.json.real", "{}\n")
		p.mkdir("codex")
		links := map[string]string{
			"claude/local":             "../secret",
			"claude/settings.json":     p.path("secret/id_ed25519"),
			"claude/CLAUDE.md":         "../secret/id_ed25519",
			"codex/AGENTS.override.md": "/run/docker.sock",
			"codex/AGENTS.md":          p.path("secret/id_ed25519"),
		}
		for l, target := range links {
			if err := os.Symlink(target, p.path(l)); err != nil {
				t.Fatal(err)
			}
			_ = os.Lchown(p.path(l), it.uid, it.gid)
		}
		env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude"), "CODEX_HOME=" + p.path("codex")}
		r := run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c",
			`cat "$CLAUDE_CONFIG_DIR/local/id_ed25519" "$CLAUDE_CONFIG_DIR/settings.json" "$CLAUDE_CONFIG_DIR/CLAUDE.md" "$CODEX_HOME/AGENTS.md" 2>/dev/null
			[ -S "$CODEX_HOME/AGENTS.override.md" ] && echo SOCKET; true`)
		if r.code != 0 || strings.Contains(r.stdout, "BAIT") || strings.Contains(r.stdout, "SOCKET") {
			t.Fatalf("a planted link was followed:\n%s", r)
		}
		for l := range links {
			if !strings.Contains(r.stderr, p.path(l)+" is a symlink") {
				t.Errorf("no warning naming %s:\n%s", l, r.stderr)
			}
		}
	})
}

// A user's bind is resolved once and held to every mask: a project link to a hidden
// path is refused (not read-write keys), and a bind of the host's /run elsewhere does
// not show the Docker socket.
func TestUserBindsHeldToMasks(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		if _, err := os.Stat("/run/docker.sock"); err != nil && iso != "bwrap" {
			needOrSkip(t, "no /run/docker.sock on this host")
		}
		p := newProject(t)
		writeHome(t, ".aws/credentials", "AWS-BAIT\n")
		t.Cleanup(func() { os.RemoveAll(filepath.Join(it.home, ".aws")) })
		if err := os.Symlink(filepath.Join(it.home, ".aws"), p.path("proj/data")); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(p.path("proj/data"), it.uid, it.gid)
		cfg := p.writeConfig(iso, "cfg.toml", "")
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--config="+cfg, "--mount", p.path("proj/data")+":/mnt/data", "--", "cat", "/mnt/data/credentials")
		if r.code != 125 || strings.Contains(r.stdout, "BAIT") || !strings.Contains(r.stderr, "hide_paths") {
			t.Fatalf("--mount of a link to ~/.aws:\n%s", r)
		}
		if _, err := os.Stat("/run/docker.sock"); err != nil {
			return
		}
		r = run(t, p.dir, nil, "", "--isolator="+iso, "--config="+cfg, "--mount", "/run:/mnt/run:ro", "--", "/bin/sh", "-c",
			`[ -S /mnt/run/docker.sock ] && echo SOCKET; [ -e /mnt/run/docker.sock ] && echo masked; true`)
		if iso == "docker-remote" {
			// The stand-in's /run is its own, without the socket to mask: the mask
			// cannot be applied there, and the run fails closed before the command.
			if r.code != 125 || strings.Contains(r.stdout, "SOCKET") {
				t.Fatalf("--mount /run:/mnt/run on an engine whose /run is not this machine's:\n%s", r)
			}
			return
		}
		if r.code != 0 || strings.Contains(r.stdout, "SOCKET") || !strings.Contains(r.stdout, "masked") {
			t.Fatalf("--mount /run:/mnt/run:\n%s", r)
		}
	})
}
