//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agentsDir is where scripts/setup-test-env.sh installs Node and the agent CLIs from
// npm (Claude Code, Codex, Gemini CLI, Copilot CLI).
const agentsDir = itDir + "/npm/node_modules/.bin"

// stubAPIEnv, when set in the environment of the test binary, makes it the stub API
// (see TestMain): it logs every request body to that file.
const stubAPIEnv = "DEVSANDBOX_IT_STUB_API"

// requireAgents skips without the real agent binaries, and fails in CI.
func requireAgents(t *testing.T) {
	t.Helper()
	for _, n := range []string{"claude", "codex"} {
		if _, err := os.Stat(filepath.Join(agentsDir, n)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI (scripts/setup-test-env.sh installs it): %v", n, err)
			}
			t.Skipf("%s is not installed (scripts/setup-test-env.sh installs it)", n)
		}
	}
}

// serveStubAPI answers the Anthropic Messages API and the OpenAI Responses API with
// one short reply each, on loopback of whatever network namespace it runs in, and
// appends each request's path and body to the file named by stubAPIEnv. It prints
// "listening ADDR" once it accepts connections.
func serveStubAPI() {
	log, err := os.OpenFile(os.Getenv(stubAPIEnv), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serveStubDNS()
	fmt.Printf("listening %s\n", ln.Addr())
	sse := func(w http.ResponseWriter, events ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i+1 < len(events); i += 2 {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", events[i], events[i+1])
		}
	}
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		fmt.Fprintf(log, "=== %s %s\n%s\n", r.Method, r.URL.Path, body)
		mu.Unlock()
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		switch {
		case strings.HasSuffix(r.URL.Path, "/responses"):
			sse(w, "response.created", `{"type":"response.created","response":{"id":"resp_1"}}`,
				"response.output_item.done", `{"type":"response.output_item.done","item":{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"STUBREPLY"}]}}`,
				"response.completed", `{"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":1,"input_tokens_details":null,"output_tokens":1,"output_tokens_details":null,"total_tokens":2}}}`)
		case strings.HasSuffix(r.URL.Path, "/messages") && req.Stream:
			sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"stub","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"STUBREPLY"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`,
				"message_stop", `{"type":"message_stop"}`)
		case strings.HasSuffix(r.URL.Path, "/messages"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"stub","content":[{"type":"text","text":"STUBREPLY"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{}`)
		}
	}))
}

// serveStubDNS answers every DNS query with "no such name" at the host's
// nameservers' addresses, which it adds to the stub's loopback: the namespace is
// offline, as a machine with a resolver but no network. Without it Codex (a musl
// build, whose resolver waits out its 5 s timeout even when the nameserver is
// unreachable) spent 5 s a run on its update and analytics look-ups. The addresses
// exist only in the stub's own network namespace: no query leaves it.
func serveStubDNS() {
	conf, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return // no resolver configured: look-ups fail at once
	}
	for line := range strings.Lines(string(conf)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		ip := net.ParseIP(f[1])
		if ip == nil {
			continue
		}
		if !ip.IsLoopback() {
			bits := "/32"
			if ip.To4() == nil {
				bits = "/128"
			}
			if out, err := exec.Command("ip", "addr", "add", ip.String()+bits, "dev", "lo").CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "stub DNS: adding %s to lo: %v: %s\n", ip, err, out)
				continue
			}
		}
		pc, err := net.ListenPacket("udp", net.JoinHostPort(ip.String(), "53"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "stub DNS: %v\n", err)
			continue
		}
		go answerNXDomain(pc)
	}
}

// answerNXDomain answers each query read from pc with its question and NXDOMAIN.
func answerNXDomain(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := buf[:n]
		if n < 12 {
			continue
		}
		end := 12 // past the question's name: labels up to the root's zero length
		for end < n && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5 // the zero length, QTYPE, QCLASS
		if end > n {
			continue
		}
		resp := append([]byte(nil), q[:end]...)
		resp[2] = 0x80 | q[2]&0x79 // QR, the query's opcode and RD
		resp[3] = 0x80 | 3         // RA, NXDOMAIN
		resp[4], resp[5] = 0, 1    // one question, no other record
		clear(resp[6:12])
		_, _ = pc.WriteTo(resp, from)
	}
}

// stubNet is a network namespace of the test's own with the stub API on its loopback.
type stubNet struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

// startStubNet starts the stub API in a new network namespace (loopback only): the
// agents run against it there and reach nothing else.
func startStubNet(t *testing.T) *stubNet {
	t.Helper()
	if !it.asOther {
		t.Skip("needs root: runs the agents in a network namespace of its own")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &stubNet{log: filepath.Join(t.TempDir(), "requests.log")}
	s.cmd = exec.Command("unshare", "--net", "--", "/bin/sh", "-c", `ip link set lo up && exec "$0"`, self)
	s.cmd.Env = []string{stubAPIEnv + "=" + s.log, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "listening ") {
		t.Fatalf("stub API: %q, %v", line, err)
	}
	s.addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return s
}

// run runs argv as the test user in dir, in the stub's network namespace, with env.
func (s *stubNet) run(t *testing.T, dir string, env []string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	args := append([]string{"--net=/proc/" + fmt.Sprint(s.cmd.Process.Pid) + "/ns/net", "--",
		"setpriv", "--reuid=" + fmt.Sprint(it.uid), "--regid=" + fmt.Sprint(it.gid), "--clear-groups", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(hostPath("/usr/local/bin:/usr/bin:/bin")), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 5 * time.Second
	return runResult(t, cmd)
}

func (s *stubNet) requests(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The review's findings 3 and 5 with the real agents: a sandbox writes, into Claude
// Code's and Codex's directories, a SessionStart hook, an apiKeyHelper, a status line
// command, MCP servers, a notify command and instructions (CLAUDE.md,
// AGENTS.override.md). Then the host's Claude Code and Codex run once each against a
// stub API: none of the planted commands runs, and no planted instruction reaches the
// model.
func TestHostAgentsRunNothingPlanted(t *testing.T) {
	requireAgents(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mkdir("claude")
		p.mkdir("codex")
		p.mkdir("markers")
		m := p.path("markers")
		settings := fmt.Sprintf(`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch %[1]s/hook"}]}],`+
			`"UserPromptSubmit":[{"hooks":[{"type":"command","command":"touch %[1]s/prompt-hook"}]}]},`+
			`"apiKeyHelper":"touch %[1]s/key-helper; echo sk-stub","statusLine":{"type":"command","command":"touch %[1]s/status"}}`, m)
		mcp := fmt.Sprintf(`{"mcpServers":{"planted":{"type":"stdio","command":"sh","args":["-c","touch %s/mcp"]}}}`, m)
		codexCfg := fmt.Sprintf("notify = [\"sh\", \"-c\", \"touch %[1]s/notify\"]\n[mcp_servers.planted]\ncommand = \"sh\"\nargs = [\"-c\", \"touch %[1]s/codex-mcp\"]\n", m)
		// set -e: a cd that fails would plant in the project instead (its CLAUDE.md is
		// the project's instructions, for the host's agents too, by design).
		script := fmt.Sprintf(`set -e; cd "$CLAUDE_CONFIG_DIR"; printf '%%s' '%s' > settings.json; printf '%%s' '%s' > .config.json
			echo PLANTED-CLAUDE-INSTRUCTION > CLAUDE.md; mkdir -p projects/-other/memory && echo PLANTED-MEMORY > projects/-other/memory/MEMORY.md
			cd "$CODEX_HOME"; printf '%%s' '%s' > config.toml; echo PLANTED-CODEX-INSTRUCTION > AGENTS.override.md; true`,
			settings, mcp, codexCfg)
		env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude"), "CODEX_HOME=" + p.path("codex")}
		if r := run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", script); r.code != 0 {
			t.Fatalf("planting:\n%s", r)
		}

		s := startStubNet(t)
		r := s.run(t, p.dir, append(env, "ANTHROPIC_BASE_URL=http://"+s.addr, "ANTHROPIC_API_KEY=sk-stub",
			"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"),
			filepath.Join(agentsDir, "claude"), "-p", "say hi")
		if r.code != 0 || !strings.Contains(r.stdout, "STUBREPLY") {
			t.Fatalf("host claude:\n%s", r)
		}
		provider := `model_providers.stub={name="stub",base_url="http://` + s.addr + `/v1",env_key="OPENAI_API_KEY",wire_api="responses"}`
		r = s.run(t, p.dir, append(env, "OPENAI_API_KEY=sk-stub"), filepath.Join(agentsDir, "codex"), "exec",
			"--skip-git-repo-check", "-c", "model_provider=stub", "-c", provider, "say hi")
		if r.code != 0 || !strings.Contains(r.stdout, "STUBREPLY") {
			t.Fatalf("host codex:\n%s", r)
		}
		reqs := s.requests(t)
		if !strings.Contains(reqs, "/messages") || !strings.Contains(reqs, "/responses") {
			t.Fatalf("the stub saw no request from both agents:\n%s", reqs)
		}
		if strings.Contains(reqs, "PLANTED") {
			t.Errorf("a planted instruction reached the host agents' model:\n%s", reqs)
		}
		ents, _ := os.ReadDir(m)
		for _, e := range ents {
			t.Errorf("the host agents ran a planted command: %s", e.Name())
		}
	})
}

// The real Claude Code and Codex work in the sandbox with their directories as the
// sandbox's own copies over the host's read-only entries, twice in a row, after the
// host's agents made their state there. bwrap only: the agents are the host's, run
// from /opt, in the stub's network namespace (--egress=open shares it).
func TestAgentsWorkInSandbox(t *testing.T) {
	requireAgents(t)
	requireBwrap(t)
	p := newProject(t)
	p.mkdir("claude")
	p.mkdir("codex")
	s := startStubNet(t)
	env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude"), "CODEX_HOME=" + p.path("codex"),
		"ANTHROPIC_BASE_URL=http://" + s.addr, "ANTHROPIC_API_KEY=sk-stub", "OPENAI_API_KEY=sk-stub",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	provider := `model_providers.stub={name="stub",base_url="http://` + s.addr + `/v1",env_key="OPENAI_API_KEY",wire_api="responses"}`
	claude := []string{filepath.Join(agentsDir, "claude"), "-p", "say hi"}
	codex := []string{filepath.Join(agentsDir, "codex"), "exec", "--skip-git-repo-check", "-c", "model_provider=stub", "-c", provider, "say hi"}
	sandboxed := func(argv []string) []string {
		return append([]string{it.bin, "--isolator=bwrap", "--egress=open", "--"}, argv...)
	}
	for i, argv := range [][]string{claude, codex, sandboxed(claude), sandboxed(codex), sandboxed(claude), sandboxed(codex)} {
		if r := s.run(t, p.dir, env, argv...); r.code != 0 || !strings.Contains(r.stdout, "STUBREPLY") {
			t.Fatalf("run %d, %q:\n%s", i, argv, r)
		}
	}
}
