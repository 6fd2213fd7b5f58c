//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// tlsOrigin is an HTTPS server on port 443 of an outside host, with a certificate for
// its address from a test CA. It records the Authorization header of each request,
// answers /echo with that header (in a header and the body), /reflect?h=NAME with the
// base64 of header NAME (gzip'd whatever the request asked for, with gz=1), and serves
// a one-ref git repository at /repo.git (smart HTTP, protocol v0, ls-remote only).
type tlsOrigin struct {
	mu    sync.Mutex
	auths []string // "PATH AUTHORIZATION" per request
}

func (o *tlsOrigin) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.auths)
}

const gitSHA = "0123456789abcdef0123456789abcdef01234567"

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

func (o *tlsOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	o.mu.Lock()
	o.auths = append(o.auths, r.URL.Path+" "+auth)
	o.mu.Unlock()
	switch {
	case r.URL.Path == "/echo":
		w.Header().Set("X-Echo", auth)
		io.WriteString(w, "echo:"+auth+"\n")
	case r.URL.Path == "/reflect":
		b64 := base64.StdEncoding.EncodeToString([]byte(r.Header.Get(r.URL.Query().Get("h"))))
		if r.URL.Query().Get("gz") == "" {
			io.WriteString(w, b64)
			break
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, b64)
		zw.Close()
	case r.URL.Path == "/repo.git/info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		io.WriteString(w, pktLine("# service=git-upload-pack\n")+"0000"+
			pktLine(gitSHA+" HEAD\x00symref=HEAD:refs/heads/main\n")+pktLine(gitSHA+" refs/heads/main\n")+"0000")
	default:
		io.WriteString(w, "hello\n")
	}
}

// testCA is a CA for origin certificates; the proxy trusts it through SSL_CERT_FILE.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "devsandbox integration origin CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (c *testCA) issue(t *testing.T, ip string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: ip},
		IPAddresses: []net.IP{net.ParseIP(ip)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// listenIn listens on addr inside the network namespace ns: the socket is made on a
// thread that joined ns, and stays in ns when that thread is gone.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	ln, err := inNetns(ns, func() (net.Listener, error) { return net.Listen("tcp", addr) })
	if err != nil {
		t.Fatalf("listening on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serveTLS serves an origin on o's port 443 with a certificate from ca.
func serveTLS(t *testing.T, o *outside, ca *testCA) *tlsOrigin {
	t.Helper()
	h := &tlsOrigin{}
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.issue(t, o.addr)}},
		ErrorLog: log.New(io.Discard, "", 0)}
	ln := listenIn(t, o.ns, o.addr+":443")
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return h
}

// TestMITMCredentialInjection runs curl and git in a bwrap sandbox with proxy.mitm and
// a credential for an outside HTTPS host, and checks that:
//   - both trust the CA bundle (curl, git ls-remote over HTTPS through the proxy);
//   - the origin receives the real token, added by the proxy or swapped for the
//     placeholder the sandbox holds;
//   - the token is nowhere the sandbox can look: its environment, its files, /proc,
//     its own traffic (curl's trace, echoed responses);
//   - the placeholder sent to another host, over HTTPS or HTTP, is refused with 403
//     and logged, and that host receives nothing;
//   - no process's command line holds the token or the placeholder, on the host.
//
// It runs for bwrap and the docker variants: krun's proxy is the host process bwrap
// has, and docker's runs where its engine is.
func TestMITMCredentialInjection(t *testing.T) {
	for _, iso := range remoteFor(t, isolators()) {
		if iso == "krun" {
			continue
		}
		t.Run(iso, func(t *testing.T) {
			if iso == "bwrap" {
				requireBwrap(t)
			} else {
				requireEngine(t, iso)
			}
			testMITMCredentialInjection(t, iso)
		})
	}
}

func testMITMCredentialInjection(t *testing.T, iso string) {
	credHost, other := newOutside(t), newOutside(t)
	originCA := newTestCA(t)
	origin := serveTLS(t, credHost, originCA)
	elsewhere := serveTLS(t, other, originCA)
	p := newProject(t)
	p.write("proj/origin-ca.pem", string(originCA.pem))
	mitmConfig := p.writeConfig(iso, "mitm.toml", fmt.Sprintf(`[proxy]
mitm = true
[[proxy.credentials]]
host = "%s:443"
header = "Authorization"
value_env = "DSB_IT_TOKEN"
format = "Bearer {}"
placeholder_env = "DSB_IT_TOKEN"
`, credHost.addr))
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	token := "ghp_IT" + hex.EncodeToString(rnd[:])

	// The script must look for the token without holding it: its text is in argv, which
	// it searches. It holds the token rot13'd and decodes it into grep's pattern stdin.
	script := fmt.Sprintf(`set -u
A=%[1]s B=%[2]s ENC=%[4]s
echo "placeholder $DSB_IT_TOKEN"
echo "ssl $SSL_CERT_FILE $GIT_SSL_CAINFO $CURL_CA_BUNDLE"
echo "whoami $(curl -sS -m 10 https://$A/whoami)"
echo "proto $(curl -sS -o /dev/null -w '%%{http_version}' -m 10 https://$A/whoami) $(curl -sS --http1.1 -o /dev/null -w '%%{http_version}' -m 10 https://$A/whoami)"
echo "echo $(curl -sS -m 10 --trace-ascii /tmp/trace -D /tmp/headers -H "Authorization: Bearer $DSB_IT_TOKEN" https://$A/echo)"
echo "git $(git ls-remote https://$A/repo.git 2>&1 | tr '\t\n' '  ')"
echo "other-https $(curl -s -o /dev/null -w '%%{http_code}' -m 10 -H "X-Key: $DSB_IT_TOKEN" https://$B/)"
echo "other-http $(curl -s -o /dev/null -w '%%{http_code}' -m 10 "http://$A:8080/?key=$DSB_IT_TOKEN")"
echo "untrusted $(curl -s -o /dev/null -w '%%{http_code}' -m 10 --cacert %[3]s https://$A/whoami; echo " exit $?")"
env > /tmp/env.txt
search() { grep -rlsF -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline /tmp /run "$HOME" "$DEVSANDBOX_PROJECT" /etc | wc -l; }
echo "search $(printf '%%s\n' "$ENC" | tr 'A-Za-z' 'N-ZA-Mn-za-m' | search)"
echo "control $(printf '%%s\n' "$DSB_IT_TOKEN" | search)"
echo ready
read _
`, credHost.addr, other.addr, filepath.Join(p.dir, "origin-ca.pem"), rot13(token))

	cmd := command(t.Context(), p.dir, baseEnv("DSB_IT_TOKEN="+token, "SSL_CERT_FILE="+filepath.Join(p.dir, "origin-ca.pem")),
		"--isolator="+iso, "--config="+mitmConfig, "--egress=proxy", "--allow", credHost.addr, "--allow", other.addr,
		"--", "/bin/sh", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := newLineReader(t, stdout)
	got := map[string]string{}
	for {
		line := lr.next()
		if line == "" && len(got) == 0 {
			t.Fatalf("no output; stderr:\n%s", &stderr)
		}
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
		if k == "ready" || line == "" {
			break
		}
	}

	// While the sandbox runs: no command line on the host holds a secret.
	placeholder := got["placeholder"]
	proxyRunning := false
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("devsandbox-proxy")) {
			proxyRunning = true
		}
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the token: %q", f, b)
		}
		if placeholder != "" && bytes.Contains(b, []byte(placeholder)) {
			t.Errorf("%s holds the placeholder", f)
		}
	}
	if !proxyRunning {
		t.Error("no devsandbox-proxy process found")
	}
	io.WriteString(stdin, "done\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("devsandbox: %v\n%v\nstderr:\n%s", err, got, &stderr)
	}

	t.Logf("inside the sandbox: %q", got)
	bundle := "/run/devsandbox/ca-bundle.pem"
	wantGot := map[string]string{
		"ssl":         bundle + " " + bundle + " " + bundle,
		"whoami":      "hello",
		"proto":       "2 1.1", // curl offers h2 first, and the proxy takes it
		"git":         gitSHA + " HEAD " + gitSHA + " refs/heads/main ",
		"other-https": "403",
		"other-http":  "403",
		"search":      "0",
	}
	for k, want := range wantGot {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if got["control"] == "0" || got["control"] == "" {
		t.Errorf("the search finds nothing, not even the placeholder (%q): it proves nothing", got["control"])
	}
	if !strings.HasPrefix(placeholder, "devsandbox-placeholder-") || strings.Contains(placeholder, token) {
		t.Errorf("the sandbox's DSB_IT_TOKEN is %q, not a placeholder", placeholder)
	}
	if e := got["echo"]; !strings.HasPrefix(e, "echo:Bearer ") || strings.Contains(e, token) {
		t.Errorf("echoed Authorization %q: want it masked", e)
	}
	if u := got["untrusted"]; strings.HasPrefix(u, "200") {
		t.Errorf("curl trusting only the origin's CA got through: the proxy did not decrypt (%q)", u)
	}

	// The origin saw the real token on every request, added or swapped; the other
	// host saw nothing.
	for _, s := range origin.seen() {
		path, auth, _ := strings.Cut(s, " ")
		if auth != "Bearer "+token {
			t.Errorf("origin %s: Authorization %q, want the real token", path, auth)
		}
	}
	if n := len(origin.seen()); n < 3 {
		t.Errorf("the origin saw %d requests, want curl's two and git's", n)
	}
	if s := elsewhere.seen(); len(s) != 0 {
		t.Errorf("the other host received %q", s)
	}

	// The audit log has the decrypted requests, the credential's header name, and the
	// refusals.
	r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
	var lines []string
	for line := range strings.Lines(r.stdout) {
		var rec struct {
			Method, Host, Path, Decision, Rule, Credential string
			Port, Status                                   int
			MITM                                           bool
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		if strings.Contains(line, token) || placeholder != "" && strings.Contains(line, placeholder) {
			t.Errorf("the audit log holds a secret: %s", line)
		}
		lines = append(lines, fmt.Sprintf("%s %s %s:%d%s %d %s %s mitm=%v", rec.Decision, rec.Method, rec.Host, rec.Port, rec.Path, rec.Status, rec.Rule, rec.Credential, rec.MITM))
	}
	t.Logf("audit log:\n%s", strings.Join(lines, "\n"))
	for _, want := range []string{
		fmt.Sprintf("allow GET %s:443/whoami 200 %s Authorization mitm=true", credHost.addr, credHost.addr),
		fmt.Sprintf("allow GET %s:443/repo.git/info/refs 200 %s Authorization mitm=true", credHost.addr, credHost.addr),
		fmt.Sprintf("deny GET %s:443/ 403 placeholder  mitm=true", other.addr),
		fmt.Sprintf("deny GET %s:8080/ 403 placeholder  mitm=false", credHost.addr),
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("audit log lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	// The CA key stayed in the state directory, 0600.
	fi, err := os.Stat(filepath.Join(it.home, ".local/state/devsandbox", p.name(), "proxy-ca.pem"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA file: %v, %v", fi, err)
	}
}

// rot13 rotates ASCII letters by 13 places, as tr 'A-Za-z' 'N-ZA-Mn-za-m' does.
func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}
