//go:build integration

package integration

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitServer is a smart-HTTP git server on an outside host: git http-backend behind
// Go's CGI host, on plain HTTP (port 8000) and HTTPS (port 443, a certificate from a
// test CA), serving one bare repository, repo.git, that accepts pushes. Every request
// must carry the Authorization a GitHub remote takes for git over HTTPS: Basic with
// x-access-token and the token; the sandbox never holds it, the proxy adds it.
type gitServer struct {
	bare string
}

func newGitServer(t *testing.T, o *outside, ca *testCA, token string) *gitServer {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	root := t.TempDir()
	g := &gitServer{bare: filepath.Join(root, "repo.git")}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@test"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	work := filepath.Join(root, "seed")
	git("init", "-q", "--bare", "-b", "main", g.bare)
	git("--git-dir", g.bare, "config", "http.receivepack", "true")
	git("init", "-q", "-b", "main", work)
	git("-C", work, "commit", "-q", "--allow-empty", "-m", "seed")
	git("-C", work, "push", "-q", g.bare, "main")

	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if r.ContentLength < 0 { // CGI needs a length; Go's CGI host refuses chunked bodies
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
		}
		backend.ServeHTTP(w, r)
	})
	plain := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go plain.Serve(listenIn(t, o.ns, o.addr+":8000"))
	t.Cleanup(func() { plain.Close() })
	secure := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.issue(t, o.addr)}}}
	go secure.ServeTLS(listenIn(t, o.ns, o.addr+":443"), "", "")
	t.Cleanup(func() { secure.Close() })
	return g
}

// refs lists the repository's refs as "ref id".
func (g *gitServer) refs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", g.bare, "for-each-ref", "--format=%(refname) %(objectname)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestGitPushPolicy runs real git in the sandbox, on every isolator, against a real
// smart-HTTP server on an outside host, under proxy.git_push = ["agent/*"] with the
// credential in [[proxy.credentials]] as the worked example of the docs writes it:
// a push to agent/* lands, over HTTPS and plain HTTP; pushes to main, to a tag, a
// mixed push and a deletion of main are refused, git prints the proxy's reason and
// fails, and the server's refs do not change (each refused push is one git sends: a
// fast-forward of a clone, since git itself refuses the others before sending); ssh to port 22 is refused with a reason
// pointing at HTTPS; the audit log holds each decision, and logs proxy --denied shows
// the refused ones.
func TestGitPushPolicy(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	ca := newTestCA(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testGitPushPolicy(t, iso, o, ca) })
}

func testGitPushPolicy(t *testing.T, iso string, o *outside, ca *testCA) {
	token := "ghp_IT" + randHex(16)
	srv := newGitServer(t, o, ca, token)
	before := srv.refs(t)
	p := newProject(t)
	p.write("proj/origin-ca.pem", string(ca.pem))
	cfg := p.writeConfig(iso, "push.toml", fmt.Sprintf(`[proxy]
mitm = true
git_push = ["agent/*"]
[[proxy.credentials]]
host = "%[1]s"
header = "Authorization"
value_env = "DSB_IT_GIT_BASIC"
format = "Basic {}"
[[proxy.credentials]]
host = "http://%[1]s:8000"
header = "Authorization"
value_env = "DSB_IT_GIT_BASIC"
format = "Basic {}"
`, o.addr))
	script := fmt.Sprintf(`A=%s
cd /tmp && git clone -q https://$A/repo.git w && cd w || exit 1
git -c user.name=t -c user.email=t@t.test commit -q --allow-empty -m work && git tag v9
try() { name=$1; shift; echo "== $name"; git push "$@" 2>&1; echo "== $name exit $?"; }
try https-agent https://$A/repo.git HEAD:refs/heads/agent/x
try plain-agent http://$A:8000/repo.git HEAD:agent/plain
try main https://$A/repo.git HEAD:main
try plain-main http://$A:8000/repo.git HEAD:main
try tag https://$A/repo.git v9
try mixed https://$A/repo.git HEAD:agent/y HEAD:main
try delete https://$A/repo.git :main
echo "== ssh"
ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ProxyCommand='/run/devsandbox/init --connect=127.0.0.1:3128 %%h %%p' git@$A true 2>&1
echo "== ssh exit $?"
`, o.addr)
	r, basic, sections, exits := runGitScript(t, p, iso, cfg, o, token, script)
	if strings.Contains(r.stdout, token) || strings.Contains(r.stdout, basic) {
		t.Error("the sandbox's output holds the token")
	}

	refusedMain := "remote: devsandbox: push to refs/heads/main refused by proxy.git_push (allowed: refs/heads/agent/*)"
	for name, want := range map[string][]string{
		"https-agent": {"* [new branch]      HEAD -> agent/x"},
		"plain-agent": {"* [new branch]      HEAD -> agent/plain"},
		"main":        {refusedMain, "! [remote rejected] HEAD -> main (refused by devsandbox proxy.git_push)", "error: failed to push some refs"},
		"plain-main":  {refusedMain, "! [remote rejected] HEAD -> main (refused by devsandbox proxy.git_push)"},
		"tag":         {"remote: devsandbox: push to refs/tags/v9 refused by proxy.git_push", "! [remote rejected] v9 -> v9"},
		"mixed": {refusedMain, "remote: devsandbox: nothing was pushed",
			"! [remote rejected] HEAD -> agent/y (not pushed: another ref of this push is outside proxy.git_push)"},
		"delete": {"remote: devsandbox: deleting refs/heads/main refused by proxy.git_push", "! [remote rejected] main (refused by devsandbox proxy.git_push)"},
		"ssh":    {"git over ssh cannot be checked against proxy.git_push; push over HTTPS"},
	} {
		if allowed := strings.HasSuffix(name, "-agent"); exits[name] == "" || (exits[name] == "0") != allowed {
			t.Errorf("%s: exit %q; want 0: %v", name, exits[name], allowed)
		}
		for _, w := range want {
			if !strings.Contains(sections[name], w) {
				t.Errorf("%s: git's output lacks %q:\n%s", name, w, sections[name])
			}
		}
	}

	after := srv.refs(t)
	id := func(ref string) string {
		for _, l := range after {
			if r, i, _ := strings.Cut(l, " "); r == ref {
				return i
			}
		}
		return ""
	}
	want := slices.Clone(before) // main, unchanged
	want = append(want, "refs/heads/agent/plain "+id("refs/heads/agent/plain"), "refs/heads/agent/x "+id("refs/heads/agent/x"))
	slices.Sort(want)
	if !slices.Equal(after, want) || id("refs/heads/agent/x") == "" {
		t.Errorf("the server's refs after the run:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(want, "\n"))
	}

	// The audit log: a push record per decision, the refused ones under --denied.
	pushes := func(args ...string) []string {
		out := run(t, p.dir, nil, "", append([]string{"logs", "proxy", "--json"}, args...)...)
		var got []string
		for line := range strings.Lines(out.stdout) {
			var rec struct {
				Kind, Decision, Rule string
				Port                 int
				Push                 *struct {
					Repo string
					Refs []struct {
						Ref, Old, New string
						Allowed       bool
					}
				}
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%v in %q", err, line)
			}
			if rec.Rule == "proxy.git_ssh" {
				got = append(got, fmt.Sprintf("%s ssh :%d", rec.Decision, rec.Port))
			}
			if rec.Kind != "push" {
				continue
			}
			s := rec.Decision + " " + rec.Push.Repo
			for _, u := range rec.Push.Refs {
				s += fmt.Sprintf(" %s %d→%d %v", u.Ref, len(u.Old), len(u.New), u.Allowed)
			}
			got = append(got, s)
		}
		return got
	}
	https, plain := "https://"+o.addr+"/repo.git", "http://"+o.addr+":8000/repo.git"
	refused := []string{
		"deny " + https + " refs/heads/main 40→40 false",
		"deny " + plain + " refs/heads/main 40→40 false",
		"deny " + https + " refs/tags/v9 40→40 false",
		"deny " + https + " refs/heads/main 40→40 false refs/heads/agent/y 40→40 true",
		"deny " + https + " refs/heads/main 40→40 false",
		"deny ssh :22",
	}
	all := append([]string{"allow " + https + " refs/heads/agent/x 40→40 true", "allow " + plain + " refs/heads/agent/plain 40→40 true"}, refused...)
	if got := pushes(); !slices.Equal(got, all) {
		t.Errorf("push records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(all, "\n"))
	}
	if got := pushes("--denied"); !slices.Equal(got, refused) {
		t.Errorf("push records under --denied:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(refused, "\n"))
	}
	text := run(t, p.dir, nil, "", "logs", "proxy", "--denied").stdout
	if !strings.Contains(text, "deny  push    "+https+" refs/heads/main ") || strings.Contains(text, token) {
		t.Errorf("logs proxy --denied:\n%s", text)
	}
}

// runGitScript runs script (sh) in p's sandbox on iso under cfg, with --egress=proxy
// and o allowed, the proxy holding basic (base64 of x-access-token:token, git's Basic
// value) as DSB_IT_GIT_BASIC and the origin's CA as SSL_CERT_FILE; it fails the test
// when the run fails. The script marks sections with "== NAME" lines and a command's
// status with "== NAME exit CODE": sections holds each section's lines, exits each
// status.
func runGitScript(t *testing.T, p *project, iso, cfg string, o *outside, token, script string) (r result, basic string, sections, exits map[string]string) {
	t.Helper()
	basic = base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	r = run(t, p.dir, []string{"DSB_IT_GIT_BASIC=" + basic, "SSL_CERT_FILE=" + filepath.Join(p.dir, "origin-ca.pem")}, "",
		"--isolator="+iso, "--config="+cfg, "--egress=proxy", "--allow", o.addr, "--", "/bin/sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("sandbox:\n%s", r)
	}
	sections, exits = map[string]string{}, map[string]string{}
	var cur string
	for line := range strings.Lines(r.stdout) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "== "); ok {
			if n, code, ok := strings.Cut(name, " exit "); ok {
				exits[n] = code
			}
			cur = name
			continue
		}
		sections[cur] += line
	}
	t.Logf("inside:\n%s", r.stdout)
	return r, basic, sections, exits
}
