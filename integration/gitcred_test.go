//go:build integration

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// wire collects what the clients of a recordedFront send, for a test to search.
type wire struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wire) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// has reports whether s was sent.
func (w *wire) has(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Contains(w.buf.Bytes(), []byte(s))
}

// A project's git config holding a credential (a token in a remote URL; an
// http.extraHeader in a file the config includes) is sent to a remote engine as
// content (the read-only copy of a file a sandbox could swap): over plain TCP to a
// non-loopback address the run is refused (125) before it crosses, naming the file
// and the key, never the value; what the engine was sent does not hold it. Over
// loopback, the engine's socket and TLS, and without a credential, the run goes
// ahead as before. Credentials in forms that name none (a query string's token, a
// presigned URL's signature, git's sendemail.smtpPass) are refused alike;
// references and empty values are no credential and go ahead.
func TestPlainTCPGitCredentials(t *testing.T) {
	if !slices.Contains(isolators(), remoteDocker) {
		t.Skip("docker-remote is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, remoteDocker)
	sent := &wire{}
	remote := recordedFront(t, nonLoopbackIP(t), sent)
	local := plainFront(t, "127.0.0.1")
	const token = "ghp_0123456789abcdefGITCRED7373"
	const header = "ZHNiOmdpdGNyZWQtaGVhZGVyLTczNzM=" // an opaque value: refused by the header's name
	run1 := func(p *project, engine string) result {
		return run(t, p.dir, []string{"DOCKER_HOST=" + engine}, "", "--isolator=docker-remote", "--", "/bin/sh", "-c", "cat .git/config; echo ran")
	}

	p := newProject(t)
	p.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://dsb:"+token+"@git.example.test/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
	r := run1(p, remote)
	t.Logf("the refusal:\n%s", r.stderr)
	if want := p.dir + "/.git/config (remote.origin.url"; r.code != 125 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "DOCKER_TLS_VERIFY=1") || strings.Contains(r.stdout, "ran") {
		t.Errorf("a token in .git/config's remote URL over plain TCP: want 125 naming %q and the fix\n%s", want, r)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("the token in the output:\n%s", r)
	}
	// A refused run prints the refusal alone: not first the warning of a run that goes ahead.
	assertClearWarnings(t, "the refused run", r, 0)
	if sent.has(token) {
		t.Errorf("the token crossed to the engine over plain TCP (%d bytes sent)", sent.buf.Len())
	}

	// A kept container is made by the same run: refused alike, and nothing kept.
	r = run(t, p.dir, []string{"DOCKER_HOST=" + remote}, "", "--isolator=docker-remote", "--keep-container", "--", "/bin/sh", "-c", "echo ran")
	if r.code != 125 || !strings.Contains(r.stderr, p.dir+"/.git/config (remote.origin.url)") || sent.has(token) {
		t.Errorf("a token in .git/config over plain TCP with --keep-container: want 125 naming the file and key, nothing sent\n%s", r)
	}
	assertClearWarnings(t, "the refused kept run", r, 0)
	if out, err := dockerCmd(remoteDocker, "ps", "-aq", "--filter", "name=devsandbox-"+p.name()).Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("after the refused kept run, the engine has containers of the project (%v): %q", err, out)
	}

	// A secret file is a secret: refused by count, as every secret is.
	p.write("key.txt", "s3cr3t-file-7373\n")
	r = run(t, p.dir, []string{"DOCKER_HOST=" + remote}, "", "--isolator=docker-remote", "--secret-file", "KEY="+p.path("key.txt"), "--", "/bin/sh", "-c", "echo ran")
	if r.code != 125 || !strings.Contains(r.stderr, "1 secret(s)") || sent.has("s3cr3t-file-7373") {
		t.Errorf("a secret file over plain TCP: want 125, nothing sent\n%s", r)
	}
	assertClearWarnings(t, "the refused run with a secret", r, 0)

	// Over loopback: sent, as before, warned of.
	r = run1(p, local)
	if r.code != 0 || !strings.Contains(r.stdout, token) || !strings.HasSuffix(r.stdout, "ran\n") || !strings.Contains(r.stderr, "is reached over plain TCP on this machine") {
		t.Errorf("a token in .git/config over loopback plain TCP: want it to run with the config, warned\n%s", r)
	}
	// Over the engine's Unix socket and over TLS: unchanged, it runs.
	r = run(t, p.dir, []string{"DOCKER_HOST=" + remoteEngine}, "", "--isolator=docker-remote", "--", "/bin/sh", "-c", "cat .git/config; echo ran")
	if r.code != 0 || !strings.Contains(r.stdout, token) || !strings.HasSuffix(r.stdout, "ran\n") {
		t.Errorf("a token in .git/config over the engine's socket: want it to run with the config\n%s", r)
	}
	if why := setupTCPEngine(); why != "" {
		t.Logf("not run over TLS: %s", why)
	} else {
		r = run(t, p.dir, tcpEnv(), "", "--isolator=docker-remote", "--", "/bin/sh", "-c", "cat .git/config; echo ran")
		if r.code != 0 || !strings.Contains(r.stdout, token) || !strings.HasSuffix(r.stdout, "ran\n") || strings.Contains(r.stderr, "plain TCP") {
			t.Errorf("a token in .git/config over TLS: want it to run with the config, no warning\n%s", r)
		}
	}

	// A file the config includes from the project travels as content too, and is
	// read as git config: an Authorization header is refused by its name.
	q := newProject(t)
	q.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[include]\n\tpath = ../.gitextra\n")
	q.write("proj/.gitextra", "[http \"https://git.example.test/\"]\n\textraHeader = \"Authorization: Basic "+header+"\"\n")
	r = run1(q, remote)
	if want := q.dir + "/.gitextra (http.https://git.example.test/.extraheader"; r.code != 125 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "ran") {
		t.Errorf("an Authorization header in an included git config over plain TCP: want 125 naming %q\n%s", want, r)
	}
	assertClearWarnings(t, "the refused run (an included file)", r, 0)
	if strings.Contains(r.stdout+r.stderr, header) || sent.has(header) {
		t.Errorf("the header's value in the output or sent to the engine:\n%s", r)
	}

	// No credential: the run goes ahead, warned of, and the config is sent.
	n := newProject(t)
	n.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://git.example.test/o/r.git\n")
	r = run1(n, remote)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "ran\n") || !strings.Contains(r.stderr, "is reached over plain TCP over the network") {
		t.Errorf("a git config without a credential over plain TCP: want it to run, warned\n%s", r)
	}
	assertClearWarnings(t, "the run that goes ahead", r, 1)
	if !sent.has("https://git.example.test/o/r.git") {
		t.Errorf("the config without a credential was not seen crossing: the recorder sees nothing (%d bytes)", sent.buf.Len())
	}

	// A file host tools run (.envrc) travels as content too, read line by line: a
	// variable named like a credential with a literal value is refused by its name.
	e := newProject(t)
	e.write("proj/.envrc", "export BUILD_MODE=fast\nexport GH_TOKEN=opaque-envrc-7373\n")
	r = run1(e, remote)
	if want := e.dir + "/.envrc (GH_TOKEN (line 2))"; r.code != 125 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout+r.stderr, "opaque-envrc-7373") || sent.has("opaque-envrc-7373") {
		t.Errorf("a token in .envrc over plain TCP: want 125 naming %q, the value neither shown nor sent\n%s", want, r)
	}

	// Forms that name no credential but carry one: a token in the query of a
	// url.<base>.insteadOf's base, git's sendemail.smtpPass, and a presigned URL's
	// signature (sig=) in .mcp.json; refused naming each key, no value shown or sent.
	const qtok, smtp, sig = "opaque-query-7373", "opaque-smtp-7373", "opaque-sig-7373"
	f := newProject(t)
	f.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[url \"https://git.example.test/?private_token="+qtok+"\"]\n\tinsteadOf = https://git.example.test/\n"+
		"[sendemail]\n\tsmtpServer = smtp.example.test\n\tsmtpUser = dsb\n\tsmtpPass = "+smtp+"\n")
	f.write("proj/.mcp.json", `{"mcpServers": {"files": {"type": "sse", "url": "https://mcp.example.test/sse?sv=2022-11-02&sig=`+sig+`"}}}`+"\n")
	r = run1(f, remote)
	for _, want := range []string{f.dir + "/.git/config (url.<…>.insteadof, sendemail.smtppass)", f.dir + "/.mcp.json (url (line 1))"} {
		if r.code != 125 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "ran") {
			t.Errorf("a query-string token, sendemail.smtpPass and a presigned URL over plain TCP: want 125 naming %q\n%s", want, r)
		}
	}
	for _, v := range []string{qtok, smtp, sig} {
		if strings.Contains(r.stdout+r.stderr, v) || sent.has(v) {
			t.Errorf("%s shown or sent to the engine over plain TCP:\n%s", v, r)
		}
	}

	// What holds no credential goes ahead: a reference (git expands nothing, so
	// github.token = ${GH_TOKEN} is its text; .envrc's "$DB_PASSWORD_DEV"), an
	// empty value, and an empty variable named like a credential passed through.
	a := newProject(t)
	a.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[github]\n\ttoken = ${GH_TOKEN}\n[hub]\n\toauthtoken =\n")
	a.write("proj/.envrc", "export DB_PASSWORD=\"$DB_PASSWORD_DEV\"\nexport API_TOKEN=\n")
	a.write("pass.toml", "[env]\npassthrough = [\"API_TOKEN\"]\n")
	r = run(t, a.dir, []string{"DOCKER_HOST=" + remote, "API_TOKEN="}, "", "--isolator=docker-remote", "--config", a.path("pass.toml"), "--", "/bin/sh", "-c", `cat .git/config .envrc; echo "ran token=[$API_TOKEN]"`)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "ran token=[]\n") || !strings.Contains(r.stdout, "token = ${GH_TOKEN}") || !strings.Contains(r.stderr, "is reached over plain TCP over the network") {
		t.Errorf("references and empty values over plain TCP: want it to run, warned\n%s", r)
	}
	if !sent.has("$DB_PASSWORD_DEV") {
		t.Errorf("the .envrc holding a reference was not seen crossing (%d bytes sent)", sent.buf.Len())
	}

	// The host's ~/.gitconfig (the git tool's binding) is bound by its path: the
	// engine reads its own file there, devsandbox sends nothing of it, and the run is
	// not refused for what it holds.
	gc := filepath.Join(it.home, ".gitconfig")
	if err := os.WriteFile(gc, []byte("[url \"https://dsb:"+token+"HOME@git.example.test/\"]\n\tinsteadOf = https://git.example.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(gc) })
	if err := os.Lchown(gc, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	r = run(t, n.dir, []string{"DOCKER_HOST=" + remote}, "", "--isolator=docker-remote", "--", "/bin/sh", "-c", "cat ~/.gitconfig; echo ran")
	if r.code != 0 || !strings.Contains(r.stdout, token+"HOME") || sent.has(token+"HOME") {
		t.Errorf("a token in ~/.gitconfig over plain TCP: want it to run, the engine's own file bound, nothing of it sent (sent: %v)\n%s", sent.has(token+"HOME"), r)
	}
}

// assertClearWarnings fails unless r's stderr holds n warnings that a run over plain
// TCP to another machine goes ahead.
func assertClearWarnings(t *testing.T, what string, r result, n int) {
	t.Helper()
	if got := strings.Count(r.stderr, "is reached over plain TCP over the network"); got != n {
		t.Errorf("%s printed %d warnings that the run goes ahead over plain TCP, want %d:\n%s", what, got, n, r.stderr)
	}
}
