//go:build integration

package integration

import (
	"slices"
	"strings"
	"testing"
)

// The plain-TCP judgement of the files sent by content finds a credential written
// where no name says so: a short query parameter (?k=), a password on a command
// line (sshpass -p), a '$' inside a literal of a file that expands none (pa$word in
// mise.toml); the run is refused (125) naming each file and key, and none of the
// values is shown or crosses. What only looks like one goes ahead and crosses: a
// key-like parameter holding a word, an ordinary word that begins like a token, an
// unquoted placeholder, and pa$word in a shell file (.envrc), where it is a reference.
func TestPlainTCPCredentialForms(t *testing.T) {
	if !slices.Contains(isolators(), remoteDocker) {
		t.Skip("docker-remote is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, remoteDocker)
	sent := &wire{}
	remote := recordedFront(t, nonLoopbackIP(t), sent)
	run1 := func(p *project) result {
		return run(t, p.dir, []string{"DOCKER_HOST=" + remote}, "", "--isolator=docker-remote", "--", "/bin/sh", "-c", "echo ran")
	}

	const short, ssh, dollar = "hunter7373k", "hunter7373ssh", "pa$word7373"
	f := newProject(t)
	f.write("proj/.mcp.json", `{"mcpServers": {"x": {"type": "sse", "url": "https://mcp.example.test/sse?k=`+short+`"}}}`+"\n")
	f.write("proj/.vscode/tasks.json", `{"tasks": [{"label": "deploy", "command": "sshpass -p `+ssh+` ssh deploy@h"}]}`+"\n")
	f.write("proj/mise.toml", "[env]\nDB_PASSWORD = \""+dollar+"\"\n")
	r := run1(f)
	t.Logf("the refusal:\n%s", r.stderr)
	for _, want := range []string{f.dir + "/.mcp.json (url (line 1))", f.dir + "/.vscode/tasks.json (sshpass -p (line 1))", f.dir + "/mise.toml (DB_PASSWORD (line 2))"} {
		if r.code != 125 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "ran") {
			t.Errorf("a short query key, sshpass -p and pa$word over plain TCP: want 125 naming %q\n%s", want, r)
		}
	}
	assertClearWarnings(t, "the refused run", r, 0)
	for _, v := range []string{short, ssh, dollar} {
		if strings.Contains(r.stdout+r.stderr, v) || sent.has(v) {
			t.Errorf("%s shown or sent to the engine over plain TCP (sent: %v):\n%s", v, sent.has(v), r)
		}
	}

	a := newProject(t)
	a.write("proj/.mcp.json", `{"mcpServers": {"docs": {"type": "sse", "url": "https://mcp.example.test/sse?key=value&t=dark"}}}`+"\n")
	a.write("proj/mise.toml", "[env]\nGROUP = \"SG.StrategyGroup.Config.Loader\"\nVAULT_HOST = \"hvs.example.internal.host\"\n")
	a.write("proj/.aider.conf.yml", "openai-api-key: <your key>\n")
	a.write("proj/.envrc", "export DB_PASSWORD=\"pa$word_dev\"\n")
	r = run1(a)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "ran\n") {
		t.Errorf("a word in ?key=, words that begin like tokens, a placeholder and a shell reference over plain TCP: want it to run\n%s", r)
	}
	assertClearWarnings(t, "the run that goes ahead", r, 1)
	for _, v := range []string{"sse?key=value", "SG.StrategyGroup", "<your key>", "pa$word_dev"} {
		if !sent.has(v) {
			t.Errorf("%s was not seen crossing (%d bytes sent)", v, sent.buf.Len())
		}
	}
}
