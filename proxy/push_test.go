package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// requireGit skips without git and its http-backend, and fails in CI.
func requireGit(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, serr := os.Stat(backend); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git and git-http-backend are required in CI: %v %v", err, serr)
		}
		t.Skip("git-http-backend not installed")
	}
	return backend
}

// gitRepos is a directory of bare repositories served by git http-backend, and a
// working clone that pushes to them.
type gitRepos struct {
	t       testing.TB
	root    string // GIT_PROJECT_ROOT: repo.git
	work    string
	env     []string // a git environment free of the user's config
	backend http.Handler
}

func newGitRepos(t testing.TB) *gitRepos {
	t.Helper()
	backend := requireGit(t)
	dir := t.TempDir()
	g := &gitRepos{t: t, root: filepath.Join(dir, "srv"), work: filepath.Join(dir, "work"),
		env: []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "PATH=" + os.Getenv("PATH"),
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@test"}}
	bare := filepath.Join(g.root, "repo.git")
	g.git("", "init", "-q", "--bare", "-b", "main", bare)
	g.git("", "--git-dir", bare, "config", "http.receivepack", "true")
	g.git("", "init", "-q", "-b", "main", g.work)
	g.commit("one")
	g.git(g.work, "tag", "v1")
	g.git(g.work, "push", "-q", bare, "main", "refs/heads/main:refs/heads/agent/old")
	g.backend = cgiBuffered(&cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1"}})
	return g
}

// cgiBuffered reads a chunked request body whole before h, a CGI handler, sees it:
// CGI needs a Content-Length, and Go's CGI host refuses chunked bodies.
func cgiBuffered(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
		}
		h.ServeHTTP(w, r)
	})
}

func (g *gitRepos) git(dir string, args ...string) string {
	g.t.Helper()
	out, err := g.try(dir, nil, args...)
	if err != nil {
		g.t.Fatalf("git %q: %v\n%s", args, err, out)
	}
	return out
}

func (g *gitRepos) try(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(g.env), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// commit commits a file named name in the work tree, of size bytes of random data
// when size > 0.
func (g *gitRepos) commit(name string, size ...int) {
	g.t.Helper()
	data := []byte(name + "\n")
	if len(size) > 0 {
		data = make([]byte, size[0])
		_, _ = rand.Read(data)
	}
	if err := os.WriteFile(filepath.Join(g.work, name), data, 0o644); err != nil {
		g.t.Fatal(err)
	}
	g.git(g.work, "add", name)
	g.git(g.work, "commit", "-q", "-m", name)
}

// refs lists the server's refs as "ref id".
func (g *gitRepos) refs() []string {
	g.t.Helper()
	out := g.git("", "--git-dir", filepath.Join(g.root, "repo.git"), "for-each-ref", "--format=%(refname) %(objectname)")
	return strings.Fields(strings.ReplaceAll(out, " ", "="))
}

// push runs git push through the proxy at proxyURL, returning its output and whether
// it succeeded.
func (g *gitRepos) push(proxyURL, remote string, extraEnv []string, args ...string) (string, bool) {
	g.t.Helper()
	out, err := g.try(g.work, extraEnv, append([]string{"-c", "http.proxy=" + proxyURL, "push", remote}, args...)...)
	return out, err == nil
}

func pushRecords(t *testing.T, h *harness) []string {
	t.Helper()
	var out []string
	for _, r := range records(t, h) {
		if r.Kind != audit.KindPush {
			continue
		}
		s := r.Decision + " " + r.Push.Repo
		for _, u := range r.Push.Refs {
			s += " " + u.Ref
			if !u.Allowed {
				s += "(refused)"
			}
		}
		out = append(out, s)
	}
	return out
}

// TestGitPushPolicy pushes with real git through the proxy (plain HTTP) to git
// http-backend: a push within the policy lands, whole and unchanged (a large one too,
// chunked after git's probe); pushes to main, to a tag, a mixed one and a deletion
// outside the policy are refused with git printing why, and the server's refs stay as
// they were; each decision is in the audit log.
func TestGitPushPolicy(t *testing.T) {
	g := newGitRepos(t)
	o := newOrigin(t, false, g.backend.ServeHTTP)
	pol := mustPolicy(t, []string{"git.test"}, nil, "deny").WithGitPush(refPatterns(t, "agent/*"), false)
	h := newHarness(t, Config{Policy: pol, Resolver: loopback("git.test")})
	remote := "http://git.test:" + o.port() + "/repo.git"
	g.commit("two")
	g.git(g.work, "push", "-q", filepath.Join(g.root, "repo.git"), "main")
	before := g.refs()
	g.commit("three")
	refusedMain := "remote: devsandbox: push to refs/heads/main refused by proxy.git_push (allowed: refs/heads/agent/*)"
	for _, tt := range []struct {
		name   string
		args   []string
		want   []string // lines git must print
		allows bool
	}{
		{"main", []string{"main"}, []string{refusedMain, "! [remote rejected] main -> main (refused by devsandbox proxy.git_push)"}, false},
		{"force to main", []string{"--force", "HEAD~2:main"}, []string{refusedMain}, false},
		{"a tag", []string{"v1"}, []string{"remote: devsandbox: push to refs/tags/v1 refused by proxy.git_push", "! [remote rejected] v1 -> v1"}, false},
		{"mixed", []string{"main:agent/x", "main"}, []string{refusedMain,
			"remote: devsandbox: nothing was pushed: a push with any ref outside proxy.git_push is refused whole",
			"! [remote rejected] main -> agent/x (not pushed: another ref of this push is outside proxy.git_push)"}, false},
		{"deleting main", []string{":main"}, []string{"remote: devsandbox: deleting refs/heads/main refused by proxy.git_push"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := g.push(h.srv.URL(), remote, nil, tt.args...)
			if ok {
				t.Fatalf("git push %v succeeded:\n%s", tt.args, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("git's output lacks %q:\n%s", w, out)
				}
			}
			if got := g.refs(); !slices.Equal(got, before) {
				t.Errorf("the server's refs changed:\n%v\nwant\n%v", got, before)
			}
		})
	}

	if out, ok := g.push(h.srv.URL(), remote, nil, "main:agent/new", ":agent/old"); !ok {
		t.Fatalf("a push within the policy failed:\n%s", out)
	}
	head := strings.TrimSpace(g.git(g.work, "rev-parse", "HEAD"))
	want := []string{"refs/heads/agent/new=" + head, before[1]} // main unchanged, agent/old gone, no tag
	if got := g.refs(); !slices.Equal(got, want) {
		t.Fatalf("refs after the allowed push:\n%v\nwant\n%v", got, want)
	}

	// Larger than git's http.postBuffer (1 MiB): git probes with an empty command
	// list, then sends the body chunked.
	g.commit("big", 3<<20)
	if out, ok := g.push(h.srv.URL(), remote, nil, "main:agent/big"); !ok {
		t.Fatalf("a large push within the policy failed:\n%s", out)
	}
	if out, ok := g.push(h.srv.URL(), remote, nil, "main"); ok || !strings.Contains(out, refusedMain) {
		t.Fatalf("a large push to main: ok=%v\n%s", ok, out)
	}
	if got := g.git(g.work, "ls-remote", "-q", filepath.Join(g.root, "repo.git"), "main"); !strings.HasPrefix(got, strings.TrimPrefix(before[1], "refs/heads/main=")) {
		t.Errorf("main on the server is %q", got)
	}

	h.shutdown(t)
	repo := "http://git.test:" + o.port() + "/repo.git"
	wantLog := []string{
		"deny " + repo + " refs/heads/main(refused)",
		"deny " + repo + " refs/heads/main(refused)",
		"deny " + repo + " refs/tags/v1(refused)",
		"deny " + repo + " refs/heads/main(refused) refs/heads/agent/x",
		"deny " + repo + " refs/heads/main(refused)",
		"allow " + repo + " refs/heads/agent/old refs/heads/agent/new",
		"allow " + repo + " refs/heads/agent/big",
		"deny " + repo + " refs/heads/main(refused)",
	}
	if got := pushRecords(t, h); !slices.Equal(got, wantLog) {
		t.Errorf("push records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	for _, r := range records(t, h) {
		if strings.HasSuffix(r.Path, "/git-receive-pack") && r.Decision == audit.DecisionDeny && r.Rule != audit.RuleGitPush {
			t.Errorf("a refused push's request record: %+v", r)
		}
	}
}

// TestGitPushPolicyMITM: over HTTPS the proxy decrypts (proxy.mitm), the same policy
// holds: within it a push lands, outside it git prints the refusal.
func TestGitPushPolicyMITM(t *testing.T) {
	g := newGitRepos(t)
	pol := mustPolicy(t, []string{"example.com"}, nil, "deny").WithGitPush(refPatterns(t, "agent/*"), false)
	m := newMITM(t, Config{Policy: pol}, g.backend.ServeHTTP)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, m.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"GIT_SSL_CAINFO=" + caFile}
	remote := "https://example.com/repo.git"
	g.commit("two")
	for _, http2 := range []string{"HTTP/1.1", "HTTP/2"} {
		env := append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.version", "GIT_CONFIG_VALUE_0="+http2)
		if out, ok := g.push(m.h.srv.URL(), remote, env, "main"); ok || !strings.Contains(out, "remote: devsandbox: push to refs/heads/main refused by proxy.git_push") {
			t.Fatalf("%s: push to main over HTTPS: ok=%v\n%s", http2, ok, out)
		}
		if out, ok := g.push(m.h.srv.URL(), remote, env, "main:agent/"+strings.ReplaceAll(http2, "/", "")); !ok {
			t.Fatalf("%s: push to agent/ over HTTPS failed:\n%s", http2, out)
		}
	}
	if got := g.refs(); !slices.Contains(got, "refs/heads/agent/HTTP2="+strings.TrimSpace(g.git(g.work, "rev-parse", "HEAD"))) {
		t.Errorf("refs: %v", got)
	}
	m.h.shutdown(t)
	if got := pushRecords(t, m.h); len(got) != 4 || !strings.HasPrefix(got[1], "allow https://example.com/repo.git refs/heads/agent/HTTP1.1") {
		t.Errorf("push records: %q", got)
	}
}

func TestClassifyPush(t *testing.T) {
	for _, tt := range []struct {
		method, target, ctype string
		want                  pushKind
	}{
		{"POST", "http://h/repo.git/git-receive-pack", "application/x-git-receive-pack-request", receivePack},
		{"POST", "http://h/org/repo/git-receive-pack", "", receivePack},
		{"POST", "http://h/repo.git/git-receive-pack?x=1", "", receivePack},
		{"GET", "http://h/repo.git/info/refs?service=git-receive-pack", "", notPush},
		{"POST", "http://h/repo.git/git-upload-pack", "application/x-git-upload-pack-request", notPush},
		{"GET", "http://h/repo.git/git-receive-pack", "", oddPush},
		{"PUT", "http://h/repo.git/git-receive-pack", "", oddPush},
		{"POST", "http://h/repo.git/git-receive-pack/", "", oddPush},
		{"POST", "http://h/repo.git//git-receive-pack", "", oddPush},
		{"POST", "http://h/x/../repo.git/git-receive-pack", "", oddPush},
		{"POST", "http://h/repo.git/./git-receive-pack", "", oddPush},
		{"POST", "http://h/repo.git/GIT-RECEIVE-PACK", "", oddPush},
		{"POST", "http://h/repo.git/git-receive%2Dpack", "", oddPush},
		{"POST", "http://h/repo.git/git-receive-pack;jsessionid=1", "", oddPush},
		{"POST", "http://h/repo.git%2Fgit-receive-pack", "", oddPush},
		{"POST", "http://h/git-receive-pack/repo.git/git-receive-pack", "", oddPush},
		{"POST", "http://h/repo.git/other", "application/x-git-receive-pack-request", oddPush},
	} {
		r, err := http.NewRequest(tt.method, tt.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.ctype != "" {
			r.Header.Set("Content-Type", tt.ctype)
		}
		if got := classifyPush(r); got != tt.want {
			t.Errorf("%s %s (%s): %v, want %v", tt.method, tt.target, tt.ctype, got, tt.want)
		}
	}
}

// TestWithGitPush: the policy it returns is a copy.
func TestWithGitPush(t *testing.T) {
	base := mustPolicy(t, nil, nil, "allow")
	p := base.WithGitPush(refPatterns(t, "agent/*", "refs/tags/v*"), false)
	if len(base.gitPush) != 0 || !p.allowsRef("refs/heads/agent/a") || p.allowsRef("refs/heads/main") || !p.allowsRef("refs/tags/v2") ||
		p.gitPushText() != "refs/heads/agent/*, refs/tags/v*" || !p.refusesSSH(22) || p.refusesSSH(2222) || base.refusesSSH(22) {
		t.Errorf("policy %+v", p)
	}
	if q := base.WithGitPush(refPatterns(t, "agent/*"), true); q.refusesSSH(22) {
		t.Error("git_ssh = true refuses port 22")
	}
}

// pushOrigin records the bodies of the requests it receives and answers 200.
type pushOrigin struct {
	*origin
	bodies chan []byte
}

func newPushOrigin(t *testing.T) *pushOrigin {
	po := &pushOrigin{bodies: make(chan []byte, 16)}
	po.origin = newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		po.bodies <- b
	})
	return po
}

// rawPush sends a request (the head lines after the request line, and body) to the
// proxy's Unix socket and returns the response's status and body.
func rawPush(t *testing.T, h *harness, requestLine string, head []string, body string, closeEarly bool) (int, string, http.Header) {
	t.Helper()
	c := h.dialUnix(t)
	msg := requestLine + "\r\n" + strings.Join(head, "\r\n") + "\r\n\r\n" + body
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if closeEarly {
		_ = c.(*net.UnixConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

const (
	pushID0 = "0000000000000000000000000000000000000000"
	pushID1 = "1111111111111111111111111111111111111111"
)

func pktl(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// chunk encodes s as HTTP/1.1 chunks of at most n bytes.
func chunk(s string, n int) string {
	var b strings.Builder
	for len(s) > 0 {
		k := min(n, len(s))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, s[:k])
		s = s[k:]
	}
	return b.String() + "0\r\n\r\n"
}

// TestGitPushRefusedUnread: requests the proxy cannot judge are refused, and nothing
// of them reaches the server; an allowed push reaches it byte for byte, also chunked
// into pieces smaller than a pkt-line.
func TestGitPushRefusedUnread(t *testing.T) {
	po := newPushOrigin(t)
	pol := mustPolicy(t, []string{"git.test"}, nil, "deny").WithGitPush(refPatterns(t, "agent/*"), false)
	h := newHarness(t, Config{Policy: pol, Resolver: loopback("git.test"), MaxPushHead: 512})
	url := "http://git.test:" + po.port() + "/repo.git/git-receive-pack"
	post := "POST " + url + " HTTP/1.1"
	host := "Host: git.test:" + po.port()
	ok := pktl(pushID0+" "+pushID1+" refs/heads/agent/x\x00report-status side-band-64k") + "0000" + "PACK\x00\x00\x00\x02" + strings.Repeat("p", 3000)
	length := func(b string) string { return "Content-Length: " + strconv.Itoa(len(b)) }
	var many strings.Builder
	for i := range 20 {
		many.WriteString(pktl(fmt.Sprintf("%s %s refs/heads/agent/%02d", pushID0, pushID1, i)))
	}
	for _, tt := range []struct {
		name        string
		line        string
		head        []string
		body        string
		closeEarly  bool
		status      int
		wantInReply string
	}{
		{"malformed pkt-line", post, []string{host, "Content-Length: 8"}, "zzzz0000", false, 400, "pkt-line length"},
		{"oversize command list", post, []string{host, length(many.String() + "0000")}, many.String() + "0000", false, 403, "too large"},
		{"early EOF", post, []string{host, "Content-Length: 1000"}, pktl(pushID0 + " " + pushID1 + " refs/heads/agent/x")[:30], true, 400, "ends inside its command list"},
		{"chunked, malformed", post, []string{host, "Transfer-Encoding: chunked"}, chunk(pktl("bogus")+"0000", 3), false, 400, "malformed"},
		{"chunked, outside the policy", post, []string{host, "Transfer-Encoding: chunked"},
			chunk(pktl(pushID0+" "+pushID1+" refs/heads/main\x00report-status")+"0000PACK", 5), false, 200, "ng refs/heads/main refused by devsandbox proxy.git_push"},
		{"not a POST", "PUT " + url + " HTTP/1.1", []string{host, length(ok)}, ok, false, 403, "not a POST"},
		{"trailing slash", "POST " + url + "/ HTTP/1.1", []string{host, length(ok)}, ok, false, 403, "not a POST to a clean"},
		{"escaped", "POST " + strings.Replace(url, "receive-pack", "receive%2Dpack", 1) + " HTTP/1.1", []string{host, length(ok)}, ok, false, 403, "git-receive-pack"},
		{"content type elsewhere", "POST http://git.test:" + po.port() + "/repo.git/x HTTP/1.1",
			[]string{host, "Content-Type: application/x-git-receive-pack-request", length(ok)}, ok, false, 403, "git-receive-pack"},
		{"compressed", post, []string{host, "Content-Encoding: gzip", length(ok)}, ok, false, 415, "Content-Encoding: gzip"},
		{"signed push", post, []string{host, length(pktl("push-cert\x00report-status") + "0000")}, pktl("push-cert\x00report-status") + "0000", false, 403, "--signed"},
		{"malformed after a side band was asked for", post, []string{host, "Content-Length: 200"},
			(pktl(pushID0+" "+pushID1+" refs/heads/agent/x\x00side-band-64k") + pktl("garbage") + "0000" + strings.Repeat("x", 200))[:200], false, 200, "\x03devsandbox: push refused: the push could not be checked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := rawPush(t, h, tt.line, tt.head, tt.body, tt.closeEarly)
			if status != tt.status || !strings.Contains(body, tt.wantInReply) {
				t.Errorf("status %d, body %q; want %d with %q", status, body, tt.status, tt.wantInReply)
			}
			if n := po.hits.Load(); n != 0 {
				t.Fatalf("the server received %d requests", n)
			}
		})
	}

	// Allowed, as one body and in 7-byte chunks: the server gets every byte.
	for _, te := range []string{"", "chunked"} {
		head, body := []string{host, length(ok)}, ok
		if te != "" {
			head, body = []string{host, "Transfer-Encoding: chunked"}, chunk(ok, 7)
		}
		if status, reply, _ := rawPush(t, h, post, head, body, false); status != 200 {
			t.Fatalf("%s: status %d: %s", te, status, reply)
		}
		if got := <-po.bodies; string(got) != ok {
			t.Errorf("%s: the server got %d bytes, not the %d sent", te, len(got), len(ok))
		}
	}
}

// TestGitSSHRefused: while a push policy is set, a CONNECT to port 22 is refused with
// a reason pointing at HTTPS, before any lookup; proxy.git_ssh = true lets it through.
func TestGitSSHRefused(t *testing.T) {
	target := newCountingListener(t)
	res := loopback("git.test")
	pol := mustPolicy(t, []string{"git.test"}, nil, "deny").WithGitPush(refPatterns(t, "agent/*"), false)
	h := newHarness(t, Config{Policy: pol, Resolver: res, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, target.Addr().String())
	}})
	resp, body, _ := rawConnect(t, h.dialUnix(t), "git.test:22")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "git over ssh cannot be checked against proxy.git_push; push over HTTPS") ||
		!strings.Contains(body, "proxy.git_ssh = true") {
		t.Errorf("CONNECT :22: %d %q", resp.StatusCode, body)
	}
	if target.accepts.Load() != 0 || res.calls.Load() != 0 {
		t.Errorf("the refused CONNECT dialled (%d) or resolved (%d)", target.accepts.Load(), res.calls.Load())
	}
	c := h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "git.test:2222"); resp.StatusCode != http.StatusOK {
		t.Errorf("CONNECT :2222: %d", resp.StatusCode)
	}
	c.Close()
	h.shutdown(t)
	// The log holds records in the order their handlers finished, and the refused
	// CONNECT's handler can finish after the second tunnel has closed (seen in CI on
	// a loaded machine): find the refused one by its port.
	var refused *audit.Record
	for _, r := range records(t, h) {
		if r.Port == 22 {
			refused = &r
		}
	}
	if refused == nil || refused.Decision != audit.DecisionDeny || refused.Rule != audit.RuleGitSSH {
		t.Errorf("the refused CONNECT :22 record: %+v", refused)
	}

	pol = mustPolicy(t, []string{"git.test"}, nil, "deny").WithGitPush(refPatterns(t, "agent/*"), true)
	h = newHarness(t, Config{Policy: pol, Resolver: res, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, target.Addr().String())
	}})
	if resp, body, _ := rawConnect(t, h.dialUnix(t), "git.test:22"); resp.StatusCode != http.StatusOK {
		t.Errorf("CONNECT :22 with git_ssh: %d %q", resp.StatusCode, body)
	}
}
