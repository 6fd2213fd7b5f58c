//go:build integration

package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestGitBasicPlaceholder runs real git over HTTPS in the sandbox with a credential
// whose placeholder git sends in its own Basic form, as a GitHub remote takes it: the
// sandbox's GH_TOKEN is a placeholder, the proxy holds base64 of x-access-token and the
// token (format "Basic {}"), and the server (newGitServer) answers only that value.
// git sends the placeholder as Basic base64("x-access-token:PH") and as
// base64("me:PH") (http.extraHeader, as CI checkouts write it), and as the URL's
// userinfo (https://x-access-token:PH@host/...). Each of ls-remote, clone, fetch and
// push must work (the server sees the real value, else it answers 401 and git fails),
// and nothing git sees holds the token: its trace of its own traffic (headers and
// bodies, unredacted) and its output, read literally and base64-decoded. The pushes
// go to agent/* under proxy.git_push, so the push policy reads them on their way.
//
// The URL's userinfo: git asks curl to find the method (CURLAUTH_ANY), so it sends no
// Authorization until a 401; the proxy sets the header on every request, none is
// answered 401, and the placeholder never leaves git (the trace shows no
// Authorization sent); so is a credential helper answering the placeholder as the
// password: git does not ask it. The three toward the host's plain HTTP port, where
// the credential does not go: the extraHeader's placeholder is refused (403) before
// anything is sent, and so are the URL's and the helper's, which git sends as Basic
// once the server answers its first request 401.
func TestGitBasicPlaceholder(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	ca := newTestCA(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testGitBasicPlaceholder(t, iso, o, ca) })
}

func testGitBasicPlaceholder(t *testing.T, iso string, o *outside, ca *testCA) {
	token := "ghp_IT" + randHex(16)
	srv := newGitServer(t, o, ca, token)
	p := newProject(t)
	p.write("proj/origin-ca.pem", string(ca.pem))
	cfg := p.writeConfig(iso, "basic.toml", fmt.Sprintf(`[proxy]
mitm = true
git_push = ["agent/*"]
[[proxy.credentials]]
host = "%s"
header = "Authorization"
value_env = "DSB_IT_GIT_BASIC"
format = "Basic {}"
placeholder_env = "GH_TOKEN"
`, o.addr))
	script := fmt.Sprintf(`A=%s
echo "== placeholder"; echo "$GH_TOKEN"
export GIT_TRACE_CURL=/tmp/trace GIT_TRACE_REDACT=0
b64() { printf '%%s' "$1" | base64 | tr -d '\n'; }
xat="http.extraHeader=Authorization: Basic $(b64 "x-access-token:$GH_TOKEN")"
me="http.extraHeader=Authorization: basic $(b64 "me:$GH_TOKEN")"
try() { name=$1; shift; echo "== $name"; : >/tmp/trace; "$@" 2>&1; rc=$?; echo "== $name exit $rc"; echo "== $name sent"; grep -i '=> Send header: authorization:' /tmp/trace | sed 's/.*: //' | sort -u; cat /tmp/trace >>/tmp/alltrace; }
cd /tmp
try ls-remote git -c "$xat" ls-remote https://$A/repo.git
try clone git -c "$xat" clone -q https://$A/repo.git w
cd w && git -c user.name=t -c user.email=t@t.test commit -q --allow-empty -m work
try fetch git -c "$me" fetch -q origin
try push git -c "$me" push -q origin HEAD:refs/heads/agent/basic
try url-ls-remote git ls-remote "https://x-access-token:$GH_TOKEN@$A/repo.git"
try url-push git push -q "https://me:$GH_TOKEN@$A/repo.git" HEAD:refs/heads/agent/url
try plain git -c "$xat" ls-remote http://$A:8000/repo.git
try plain-url git ls-remote "http://x-access-token:$GH_TOKEN@$A:8000/repo.git"
helper='credential.helper=!f() { echo username=x-access-token; echo "password=$GH_TOKEN"; }; f'
try helper git -c "$helper" ls-remote https://$A/repo.git
try plain-helper git -c "$helper" ls-remote http://$A:8000/repo.git
echo "== trace"; wc -c </tmp/alltrace; echo "== trace-b64"; tr -s ' \t' '\n\n' </tmp/alltrace | grep -E '^[A-Za-z0-9+/]{24,}={0,2}$' | sort -u
`, o.addr)
	r, basic, sections, exits := runGitScript(t, p, iso, cfg, o, token, script)
	if readsBack(token, r.stdout) || strings.Contains(r.stdout, basic) {
		t.Error("the sandbox's output (its git trace's base64 words included) holds the token")
	}
	placeholder := strings.TrimSpace(sections["placeholder"])
	if !strings.HasPrefix(placeholder, "devsandbox-placeholder-") {
		t.Fatalf("GH_TOKEN inside is %q, not a placeholder", placeholder)
	}
	if n := strings.TrimSpace(sections["trace"]); n == "" || n == "0" {
		t.Errorf("git's trace is empty (%q): the search of it proves nothing", n)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for name, sent := range map[string]string{
		"ls-remote":     "Basic " + b64("x-access-token:"+placeholder),
		"clone":         "Basic " + b64("x-access-token:"+placeholder),
		"fetch":         "basic " + b64("me:"+placeholder),
		"push":          "basic " + b64("me:"+placeholder),
		"url-ls-remote": "",
		"url-push":      "",
		"plain":         "Basic " + b64("x-access-token:"+placeholder),
		"plain-url":     "Basic " + b64("x-access-token:"+placeholder),
		"helper":        "",
		"plain-helper":  "Basic " + b64("x-access-token:"+placeholder),
	} {
		if strings.HasPrefix(name, "plain") {
			if exits[name] == "0" || !strings.Contains(sections[name], "returned error: 403") || !strings.Contains(sections[name], "the placeholder of GH_TOKEN") {
				t.Errorf("%s: exit %q, want git refused 403 by the proxy:\n%s", name, exits[name], sections[name])
			}
		} else if exits[name] != "0" {
			t.Errorf("%s: exit %q, want 0 (the server answers only the real value):\n%s", name, exits[name], sections[name])
		}
		if got := strings.TrimSpace(sections[name+" sent"]); got != sent {
			t.Errorf("%s: git sent Authorization %q, want %q", name, got, sent)
		}
	}
	if !strings.Contains(sections["ls-remote"], "refs/heads/main") {
		t.Errorf("ls-remote lists no main:\n%s", sections["ls-remote"])
	}
	var pushes, refused []string
	for line := range strings.Lines(run(t, p.dir, nil, "", "logs", "proxy", "--json").stdout) {
		var rec struct {
			Kind, Decision, Rule string
			Push                 *struct{ Refs []struct{ Ref string } }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		if strings.Contains(line, token) || strings.Contains(line, basic) || strings.Contains(line, placeholder) {
			t.Errorf("the audit log holds a secret: %s", line)
		}
		if rec.Kind == "push" && rec.Push != nil && len(rec.Push.Refs) == 1 {
			pushes = append(pushes, rec.Decision+" "+rec.Push.Refs[0].Ref)
		}
		if rec.Rule == "placeholder" {
			refused = append(refused, rec.Decision)
		}
	}
	if want := []string{"allow refs/heads/agent/basic", "allow refs/heads/agent/url"}; !slices.Equal(pushes, want) {
		t.Errorf("push records %q, want %q", pushes, want)
	}
	if len(refused) != 3 {
		t.Errorf("placeholder refusals recorded: %q, want the three toward the plain HTTP port", refused)
	}
	refs := strings.Join(srv.refs(t), "\n")
	for _, ref := range []string{"refs/heads/agent/basic ", "refs/heads/agent/url "} {
		if !strings.Contains(refs, ref) {
			t.Errorf("the server lacks %s after the pushes:\n%s", ref, refs)
		}
	}
}
