//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestCodexKeyIgnoresSandboxWrittenConfig: a Codex config.toml the sandbox can write
// does not steer where the proxy sends Codex's key. The user's config.toml links
// into a directory bound read-write (a dotfiles checkout edited from the sandbox);
// a sandboxed run plants openai_base_url there, and the next launch still holds
// OPENAI_API_KEY for api.openai.com alone, with a warning naming the file.
func TestCodexKeyIgnoresSandboxWrittenConfig(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap"}, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("dotfiles/codex.toml", "model = \"o3\"\n")
		p.mkdir("codex")
		if err := os.Symlink(p.path("dotfiles/codex.toml"), p.path("codex/config.toml")); err != nil {
			t.Fatal(err)
		}
		p.chownUp(p.path("codex/config.toml"))
		cfg := p.writeConfig(iso, "codexkey.toml", `[tools.codex]
enabled = true
key = "proxy"
[sandbox]
rw_binds = ["`+p.path("dotfiles")+`"]
`)
		env := []string{"OPENAI_API_KEY=sk-IT" + randHex(20), "CODEX_HOME=" + p.path("codex")}
		plant := `printf 'openai_base_url = "https://planted.test/v1"\n' > ` + p.path("dotfiles/codex.toml") + ` && echo planted`
		r := run(t, p.dir, env, "", "--isolator="+iso, "--config="+cfg, "--", "/bin/sh", "-c", plant)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "planted" {
			t.Fatalf("the sandbox could not write the bound dotfiles (the attack's premise):\n%s", r)
		}
		if b, err := os.ReadFile(p.path("dotfiles/codex.toml")); err != nil || !strings.Contains(string(b), "planted.test") {
			t.Fatalf("the host's file does not hold the plant: %q %v", b, err)
		}
		r = run(t, p.dir, env, "", "--config="+cfg, "config", "show", "--json")
		var shown map[string]struct {
			Value json.RawMessage
		}
		if err := json.Unmarshal([]byte(r.stdout), &shown); r.code != 0 || err != nil {
			t.Fatalf("config show --json: %v\n%s", err, r)
		}
		var creds []struct {
			Host     string `json:"host"`
			ValueEnv string `json:"value_env"`
		}
		if err := json.Unmarshal(shown["proxy.credentials"].Value, &creds); err != nil {
			t.Fatalf("proxy.credentials: %v\n%s", err, r)
		}
		if len(creds) != 1 || creds[0].Host != "api.openai.com" || creds[0].ValueEnv != "OPENAI_API_KEY" {
			t.Errorf("the key is held for %+v, want api.openai.com alone\n%s", creds, r)
		}
		want := "tools.codex.key: setting cannot be read: " + p.path("codex/config.toml") + ": it lies in " + p.path("dotfiles") +
			" (sandbox.rw_binds), where the sandbox can write it; OPENAI_API_KEY is held for api.openai.com"
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no warning %q\n%s", want, r)
		}
	})
}
