//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
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

// TestCodexKeyFollowsCLIFlag: the real Codex, run as the command (`devsandbox --
// codex … -c openai_base_url=URL`), sends its key where its -c flag says, and the
// proxy holds the key for that host too: the stub on an outside host receives the
// real key. config.toml points openai_base_url at a port the proxy refuses: were the
// key held only there and for api.openai.com, or Codex to go there, the run would fail.
func TestCodexKeyFollowsCLIFlag(t *testing.T) {
	requireAgentCLIs(t)
	requireRoot(t)
	o := newOutside(t)
	ca := newTestCA(t)
	stub := serveStub(t, o, ca, "")
	forEachIsolatorOf(t, []string{"bwrap"}, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/origin-ca.pem", string(ca.pem))
		p.write("codex-home/config.toml", "openai_base_url = \"https://127.0.0.1:9/v1\"\n")
		cfg := p.writeConfig(iso, "agents.toml", fmt.Sprintf("[tools.codex]\nenabled = true\nkey = \"proxy\"\n[sandbox]\nro_binds = [%q]\n", itDir))
		key := "sk-IT" + randHex(20)
		env := []string{"OPENAI_API_KEY=" + key, "CODEX_HOME=" + p.path("codex-home"),
			"SSL_CERT_FILE=" + p.path("proj/origin-ca.pem"), hostPath(agentsDir + ":/usr/local/bin:/usr/bin:/bin")}
		stub.reset()
		r := runAgent(t, p.dir, env, "--isolator="+iso, "--config="+cfg, "--allow", o.addr, "--",
			agentsDir+"/codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"-c", `openai_base_url="https://`+o.addr+`/v1"`, "Reply.")
		reqs := stub.requests()
		if r.code != 0 || !strings.Contains(r.stdout, stubReply) || len(reqs) == 0 {
			t.Fatalf("codex with -c openai_base_url did not answer with the stub's reply (%d requests):\n%s", len(reqs), r)
		}
		for _, q := range reqs {
			if v := q.Header.Get("Authorization"); v != "Bearer "+key {
				t.Errorf("%s arrived with Authorization %q, want the real key", q.Path, v)
			}
		}
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Error("the key's value appears in devsandbox's output")
		}
	})
}
