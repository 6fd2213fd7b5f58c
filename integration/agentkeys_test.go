//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// itDir is where scripts/setup-test-env.sh installs Node and the agents (agentsDir)
// and Copilot CLI's unpacked package, readable by the test user. The test image has
// the same Node at /usr/local/bin/node.
const itDir = "/opt/devsandbox-it"

// agentCase is one agent CLI as the end-to-end test runs it.
type agentCase struct {
	tool   string
	name   string // the subtest's, when not tool (a second case of one tool)
	keyEnv string // the API key's variable
	// header and prefix say how the key reaches the API: the stub must see prefix+key.
	header, prefix string
	dirEnv         string // the variable naming the tool's directory (set to a dir of the test's)
	dirRel         string // the tool's directory below that dir ("" for the dir itself)
	// config are files of the host's tool directory that configure hooks, plugins or
	// MCP servers: read-only inside. Their content is harmless ("{}"), or what
	// content returns for the stub at base.
	config  []string
	content func(base string) map[string]string
	// credentials are [[proxy.credentials]] for the stub at addr, for an agent whose
	// endpoint is set where devsandbox does not follow it (none now: Codex's
	// openai_base_url it follows).
	credentials func(addr string) string
	// env gives the host environment pointing the agent at the stub at base.
	env func(base string) []string
	// argv runs the agent non-interactively (the prompt is appended); inEnv are
	// assignments for its command line inside (VAR=value ...).
	argv  []string
	inEnv string
	// state is a shell glob, below the tool's directory, of what a run leaves there.
	state string
}

var agentCases = []agentCase{
	{tool: "claude", keyEnv: "ANTHROPIC_API_KEY", header: "X-Api-Key", dirEnv: "CLAUDE_CONFIG_DIR",
		config: []string{"settings.json", "CLAUDE.md"},
		env: func(base string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + base, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		},
		argv:  []string{"claude", "-p", "--dangerously-skip-permissions"},
		state: "projects/*/*.jsonl"},
	// Codex reads its endpoint from config.toml (openai_base_url), which
	// tools.codex.key follows. It ignores OPENAI_BASE_URL, set here (as a user's
	// other tools, qwen, would have it) to a port of this machine the proxy refuses:
	// were the key held there, or Codex to go there, the run would fail.
	{tool: "codex", keyEnv: "OPENAI_API_KEY", header: "Authorization", prefix: "Bearer ", dirEnv: "CODEX_HOME",
		config: []string{"config.toml", "AGENTS.md"},
		content: func(base string) map[string]string {
			return map[string]string{"config.toml": "openai_base_url = \"" + base + "/v1\"\n"}
		},
		env:   func(string) []string { return []string{"OPENAI_BASE_URL=https://127.0.0.1:9/v1"} },
		argv:  []string{"codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"},
		state: "sessions/*/*/*/rollout-*.jsonl"},
	// Codex with a provider of its own whose env_key is the key's variable, selected
	// by model_provider: the key is held for that provider's base_url. openai_base_url
	// points at a port the proxy refuses: were the key held only for the built-in
	// provider's host, or Codex to go there, the run would fail.
	{tool: "codex", name: "codex-provider", keyEnv: "OPENAI_API_KEY", header: "Authorization", prefix: "Bearer ", dirEnv: "CODEX_HOME",
		config: []string{"config.toml", "AGENTS.md"},
		content: func(base string) map[string]string {
			return map[string]string{"config.toml": "openai_base_url = \"https://127.0.0.1:9/v1\"\nmodel_provider = \"stub\"\n" +
				"[model_providers.stub]\nname = \"stub\"\nbase_url = \"" + base + "/v1\"\nenv_key = \"OPENAI_API_KEY\"\n"}
		},
		env:   func(string) []string { return nil },
		argv:  []string{"codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"},
		state: "sessions/*/*/*/rollout-*.jsonl"},
	{tool: "gemini", keyEnv: "GEMINI_API_KEY", header: "X-Goog-Api-Key", dirEnv: "GEMINI_CLI_HOME", dirRel: ".gemini",
		config: []string{"settings.json", "GEMINI.md"},
		content: func(string) map[string]string {
			// The API key as the auth method; no folder trust prompt.
			return map[string]string{"settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}` + "\n"}
		},
		env:  func(base string) []string { return []string{"GOOGLE_GEMINI_BASE_URL=" + base} },
		argv: []string{"gemini", "--yolo", "-p"},
		// Gemini CLI otherwise starts a second Node with a larger heap before any
		// work, which loads the whole bundle again.
		inEnv: "GEMINI_CLI_NO_RELAUNCH=true",
		state: "tmp/*/*"},
	{tool: "copilot", keyEnv: "COPILOT_PROVIDER_API_KEY", header: "Authorization", prefix: "Bearer ", dirEnv: "COPILOT_HOME",
		config: []string{"settings.json", "mcp-config.json"},
		env: func(base string) []string {
			return []string{"COPILOT_PROVIDER_BASE_URL=" + base + "/v1", "COPILOT_MODEL=stub-model", "COPILOT_OFFLINE=true",
				"COPILOT_PKG_CACHE_HOME=" + itDir + "/copilot-pkg"}
		},
		argv:  []string{"copilot", "--allow-all-tools", "-p"},
		state: "session-state/*"},
}

// requireAgentCLIs skips without the agents and their Node, and fails in CI.
func requireAgentCLIs(t *testing.T) {
	t.Helper()
	for _, p := range []string{agentsDir + "/node", agentsDir + "/claude", agentsDir + "/codex", agentsDir + "/gemini", agentsDir + "/copilot"} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI (scripts/setup-test-env.sh installs it): %v", p, err)
			}
			t.Skipf("%s is not installed (scripts/setup-test-env.sh installs it)", p)
		}
	}
}

// TestAgentsEndToEnd runs each real agent CLI, on every isolator, against a stub of
// its provider's API on an outside host, through the proxy in the default egress
// mode, with its key held outside (tools.<name>.key = "proxy"). For each:
//   - the agent answers with the stub's reply, after one tool-use round trip: the stub
//     asks it to run a shell command that reads ~/.ssh/id_ed25519 and writes a file in
//     the project; the key's content never reaches the stub, the file lands on the host;
//   - the stub receives the real key on every request; inside, the variable holds a
//     placeholder, and the key is nowhere the sandbox can look (environments and command
//     lines in /proc, the home, the tool's directory, the project, /tmp, /run);
//   - the files of the host's tool directory that configure hooks, plugins or MCP
//     servers are read-only inside and unchanged on the host;
//   - the agent's state persists in the sandbox across runs: the second run finds what
//     the first left.
func TestAgentsEndToEnd(t *testing.T) {
	requireAgentCLIs(t)
	requireRoot(t)
	writeHome(t, ".ssh/id_ed25519", "PRIVATE-KEY-BAIT\n")
	// Not against the stand-in engine (docker-remote): the agents and their tools are
	// the local docker variant's case; what the stand-in changes (the proxy, its
	// credentials and CA in the engine) the MITM and egress tests check there, and the
	// agents' runs are the suite's slowest.
	forEachIsolatorOf(t, withoutRemote(isolators()), func(t *testing.T, iso string) {
		// An outside host and stub API per isolator: the subtests run at once (inLanes),
		// and the stub answers by what it was asked before.
		o := newOutside(t)
		ca := newTestCA(t)
		stub := serveStub(t, o, ca, "")
		for _, ac := range agentCases {
			name := ac.name
			if name == "" {
				name = ac.tool
			}
			t.Run(name, func(t *testing.T) { testAgentEndToEnd(t, iso, ac, o, ca, stub) })
		}
	})
}

func testAgentEndToEnd(t *testing.T, iso string, ac agentCase, o *outside, ca *testCA, stub *stubAPI) {
	p := newProject(t)
	p.write("proj/origin-ca.pem", string(ca.pem))
	hostDir := p.path(ac.tool + "-home")
	toolDir := filepath.Join(hostDir, ac.dirRel)
	base := "https://" + o.addr
	var content map[string]string
	if ac.content != nil {
		content = ac.content(base)
	}
	for _, f := range ac.config {
		c, ok := content[f]
		if !ok {
			c = hostConfig(f)
		}
		p.write(filepath.Join(ac.tool+"-home", ac.dirRel, f), c)
	}
	creds := ""
	if ac.credentials != nil {
		creds = "[proxy]\nmitm = true\n" + ac.credentials(o.addr)
	}
	before := treeOf(t, toolDir)
	cfg := p.writeConfig(iso, "agents.toml", fmt.Sprintf(`[tools.%s]
enabled = true
key = "proxy"
[sandbox]
ro_binds = [%q]
%s`, ac.tool, itDir, creds))
	key := "sk-IT" + randHex(20)
	env := append(ac.env(base), ac.keyEnv+"="+key, ac.dirEnv+"="+hostDir,
		"SSL_CERT_FILE="+p.path("proj/origin-ca.pem"), hostPath(agentsDir+":/usr/local/bin:/usr/bin:/bin"))
	wrote := filepath.Join(p.dir, "agent-"+ac.tool+".txt")
	stub.cmd = fmt.Sprintf("cat ~/.ssh/id_ed25519; echo TOOL-RAN > %s", wrote)
	inDir := `"$` + ac.dirEnv + `"/` + ac.dirRel
	// The script holds the key rot13'd: its text is in /proc, which it searches.
	var script strings.Builder
	fmt.Fprintf(&script, "D=%s\n", inDir)
	fmt.Fprintf(&script, "echo \"state-before $(ls -d $D/%s 2>/dev/null | wc -l)\"\n", ac.state)
	fmt.Fprintf(&script, "%s timeout 60 %s/%s %s 'Run the check, then reply.' >/tmp/agent.out 2>&1; echo \"agent-exit $?\"\n",
		ac.inEnv, agentsDir, ac.argv[0], strings.Join(ac.argv[1:], " "))
	script.WriteString("sed 's/^/agent: /' /tmp/agent.out\n")
	fmt.Fprintf(&script, "echo \"key-var $(printf %%s \"$%s\" | cut -c1-23)\"\n", ac.keyEnv)
	for _, f := range ac.config {
		fmt.Fprintf(&script, "(printf planted >> $D/%[1]s) 2>/dev/null && echo 'wrote %[1]s'\n", f)
	}
	fmt.Fprintf(&script, `search() { grep -rlsF -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline /tmp /run "$HOME" "$D" "$DEVSANDBOX_PROJECT" | wc -l; }
echo "search $(printf '%%s\n' %s | tr 'A-Za-z' 'N-ZA-Mn-za-m' | search)"
echo "control $(printf '%%s\n' "$%s" | search)"
echo "state-after $(ls -d $D/%s 2>/dev/null | wc -l)"
`, rot13(key), ac.keyEnv, ac.state)

	for i := 1; i <= 2; i++ {
		stub.reset()
		_ = os.Remove(wrote)
		r := runAgent(t, p.dir, env, "--isolator="+iso, "--config="+cfg, "--allow", o.addr, "--", "/bin/sh", "-c", script.String())
		got := map[string]string{}
		for line := range strings.Lines(r.stdout) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
			if k != "agent:" {
				got[k] = v
			}
		}
		reqs := stub.requests()
		fail := func(format string, a ...any) {
			t.Helper()
			var paths []string
			for _, q := range reqs {
				paths = append(paths, q.Path+" "+strings.Join(q.Tools, ","))
			}
			t.Fatalf("run %d: %s\n%s\nstub requests: %q", i, fmt.Sprintf(format, a...), r, paths)
		}
		if r.code != 0 || got["agent-exit"] != "0" || !strings.Contains(r.stdout, stubReply) {
			fail("the agent did not answer with the stub's reply")
		}
		if b, err := os.ReadFile(wrote); err != nil || string(b) != "TOOL-RAN\n" {
			fail("the tool call's file did not land in the project: %q, %v", b, err)
		}
		var toolTurn bool
		for _, q := range reqs {
			if v := q.Header.Get(ac.header); v != ac.prefix+key {
				fail("%s arrived with %s %q, want the real key", q.Path, ac.header, v)
			}
			if strings.Contains(q.Body, "PRIVATE-KEY-BAIT") || strings.Contains(q.Body, "devsandbox-placeholder-") {
				fail("%s carried the ssh key bait or the placeholder:\n%s", q.Path, q.Body)
			}
			toolTurn = toolTurn || strings.Contains(q.Body, "TOOL-RAN") || strings.Contains(q.Body, "id_ed25519")
		}
		if !toolTurn {
			fail("no request carried the tool call's result back")
		}
		if !strings.HasPrefix(got["key-var"], "devsandbox-placeholde") {
			fail("the sandbox's %s is %q, not a placeholder", ac.keyEnv, got["key-var"])
		}
		if got["search"] != "0" {
			fail("the key is readable inside the sandbox (%s files hold it)", got["search"])
		}
		if got["control"] == "0" || got["control"] == "" {
			fail("the search finds not even the placeholder (%q): it proves nothing", got["control"])
		}
		for _, f := range ac.config {
			if strings.Contains(r.stdout, "wrote "+f) {
				fail("%s of the host's tool directory was writable inside", f)
			}
		}
		if n := got["state-after"]; n == "0" || n == "" {
			fail("the agent left no state matching %s", ac.state)
		}
		if i == 2 && (got["state-before"] == "0" || got["state-before"] == "") {
			fail("the second run did not find the first run's state (%s)", ac.state)
		}
	}
	after := treeOf(t, toolDir)
	var changed []string
	for _, f := range ac.config {
		if before[f] != after[f] {
			changed = append(changed, f)
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Errorf("the sandbox changed the host's %v", changed)
	}
}

// hostConfig is a harmless configuration file of the host's tool, by name.
func hostConfig(name string) string {
	switch {
	case strings.HasSuffix(name, ".json"):
		return "{}\n"
	case strings.HasSuffix(name, ".toml"):
		return "# the host's configuration\n"
	}
	return "The host's instructions.\n"
}

// runAgent is run with a longer bound: an agent starts Node and talks to the stub twice.
func runAgent(t *testing.T, dir string, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := command(ctx, dir, baseEnv(extraEnv...), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			code = ee.ExitCode()
		} else {
			t.Fatalf("running devsandbox %q: %v", args, err)
		}
	}
	return result{out.String(), errb.String(), code}
}
