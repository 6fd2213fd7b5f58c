//go:build integration

package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlaceholderReflected is the attack on the credential swap from a real sandbox:
// curl inside puts the placeholder in a header the credential's host reflects
// (X-Debug, echoed base64'd, where masking the literal value finds nothing), and asks
// the host to echo its own Authorization base64'd, plain and gzip'd although the proxy
// asked for identity. The placeholder outside the credential's header is refused (403
// naming the header, recorded as rule "placeholder"), the origin never sees that
// request; the echoes of the real header come back masked; the origin gets the real
// token where it belongs. Every isolator: bwrap and krun run the proxy on the host,
// the docker variants in their engine (the stand-in remote one's too).
func TestPlaceholderReflected(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		credHost := newOutside(t)
		originCA := newTestCA(t)
		origin := serveTLS(t, credHost, originCA)
		p := newProject(t)
		p.write("proj/origin-ca.pem", string(originCA.pem))
		cfg := p.writeConfig(iso, "ph.toml", fmt.Sprintf(`[proxy]
mitm = true
[[proxy.credentials]]
host = "%s:443"
header = "Authorization"
value_env = "DSB_IT_TOKEN"
format = "Bearer {}"
placeholder_env = "DSB_IT_TOKEN"
`, credHost.addr))
		token := "ghp_IT" + randHex(16)
		script := fmt.Sprintf(`A=%s
get() { k=$1; shift; c=$(curl -sS -m 10 -o /tmp/b -w '%%{http_code}' "$@"); echo "$k $c $(tr '\n' ' ' </tmp/b)"; }
get debug -H "X-Debug: $DSB_IT_TOKEN" "https://$A/reflect?h=X-Debug"
get auth -H "Authorization: Bearer $DSB_IT_TOKEN" "https://$A/reflect?h=Authorization"
get authgz "https://$A/reflect?h=Authorization&gz=1"
`, credHost.addr)
		r := run(t, p.dir, []string{"DSB_IT_TOKEN=" + token, "SSL_CERT_FILE=" + filepath.Join(p.dir, "origin-ca.pem")},
			"", "--isolator="+iso, "--config="+cfg, "--egress=proxy", "--allow", credHost.addr, "--", "/bin/sh", "-c", script)
		if r.code != 0 {
			t.Fatalf("devsandbox:\n%s", r)
		}
		t.Logf("inside the sandbox:\n%s", r.stdout)
		got := map[string][2]string{}
		for line := range strings.Lines(r.stdout) {
			k, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
			code, body, _ := strings.Cut(rest, " ")
			got[k] = [2]string{code, body}
		}
		for k, v := range got {
			if readsBack(token, v[1]) {
				t.Errorf("%s: the sandbox read the token back: %q", k, v[1])
			}
		}
		if d := got["debug"]; d[0] != "403" || !strings.Contains(d[1], "placeholder of DSB_IT_TOKEN in header X-Debug") {
			t.Errorf("the placeholder in X-Debug: %q, want 403 naming the header", d)
		}
		for _, k := range []string{"auth", "authgz"} {
			if g := got[k]; g[0] != "200" || len(g[1]) < 40 {
				t.Errorf("%s: %q, want 200 and the masked echo", k, g)
			}
		}
		seen := origin.seen()
		for _, s := range seen {
			if path, auth, _ := strings.Cut(s, " "); auth != "Bearer "+token {
				t.Errorf("origin %s: Authorization %q, want the real token", path, auth)
			}
		}
		if len(seen) != 2 {
			t.Errorf("the origin saw %d requests, want the two echoes of Authorization (the X-Debug one refused before it): %q", len(seen), seen)
		}
		logs := run(t, p.dir, nil, "", "logs", "proxy", "--json")
		found := false
		for line := range strings.Lines(logs.stdout) {
			var rec struct{ Decision, Rule, Reason, Path string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%v in %q", err, line)
			}
			if strings.Contains(line, token) || strings.Contains(line, "devsandbox-placeholder-") {
				t.Errorf("the audit log holds a secret: %s", line)
			}
			found = found || rec.Decision == "deny" && rec.Rule == "placeholder" && rec.Path == "/reflect" && strings.Contains(rec.Reason, "in header X-Debug")
		}
		if !found {
			t.Errorf("no deny record naming the placeholder in X-Debug:\n%s", logs.stdout)
		}
	})
}

// readsBack reports whether token can be read from s: literally or base64-decoded.
func readsBack(token, s string) bool {
	for _, f := range append(strings.Fields(s), s) {
		if strings.Contains(f, token) {
			return true
		}
		if b, err := base64.StdEncoding.DecodeString(f); err == nil && strings.Contains(string(b), token) {
			return true
		}
	}
	return false
}
