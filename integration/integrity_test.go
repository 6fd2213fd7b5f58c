//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The proxy's own integrity: what the sandbox sends cannot erase the audit log,
// choose whether a credential crosses the network in clear, turn a malformed target
// into a suggestion, or reach the host's loopback; and the socket directory cannot be
// taken over by another local user.

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// auditLine is the part of an audit record these tests look at.
type auditLine struct {
	Kind, Session, Method, Host, Path, Decision, Rule string
	Port, Status, PathBytes, Dropped                  int
}

func parseAudit(t *testing.T, out string) []auditLine {
	t.Helper()
	var recs []auditLine
	for line := range strings.Lines(out) {
		var r struct {
			auditLine
			PathBytes int `json:"path_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		r.auditLine.PathBytes = r.PathBytes
		recs = append(recs, r.auditLine)
	}
	return recs
}

// floodScript sends, on one keep-alive connection to the sandbox's proxy, one allowed
// request carrying marker, then n denied requests for a private address with a path
// of 60,000 bytes each.
func floodScript(allowed, denied, marker string, n int) string {
	return fmt.Sprintf(`import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=30)
def get(url):
    c.request("GET", url)
    r = c.getresponse()
    r.read()
    return r.status
print("marker", get("http://%[1]s/%[3]s"))
long = "/" + "A" * 60000
codes = {}
for i in range(%[4]d):
    s = get("http://%[2]s" + long)
    codes[s] = codes.get(s, 0) + 1
print("flood", sorted(codes.items()))
`, allowed, denied, marker, n)
}

// TestAuditLogSurvivesFlood: one allowed request with a marker, then a flood of
// denied requests with huge paths on one keep-alive connection, cannot push the marker
// or an earlier session's records out of the audit log: denied records beyond the
// session's budget are counted in a marker, records are bounded, and a follower that
// ran through it all missed nothing.
func TestAuditLogSurvivesFlood(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testAuditLogSurvivesFlood(t, iso, o) })
}

func testAuditLogSurvivesFlood(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	flags := []string{"--egress=proxy", "--allow", o.addr + ":8080"}
	early := "early-" + randHex(6)
	if out := p.mustSandbox(iso, flags, fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}\n' -m 5 http://%s:8080/%s`, o.addr, early)); out != "404\n" {
		t.Fatalf("the earlier session's request: %q", out)
	}

	follow := command(t.Context(), p.dir, baseEnv(), "logs", "proxy", "--follow", "--json")
	fout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	followed := newLineReader(t, fout)
	followed.waitFor(`{`) // the earlier session's record: the follower is running

	const flood, budget = 1200, 1000 // budget: audit.DefaultDeniedBudget
	marker := "marker-" + randHex(6)
	p.write("proj/flood.py", floodScript(o.addr+":8080", o.addr+":9", marker, flood))
	out := p.mustSandbox(iso, flags, "python3 flood.py")
	if want := fmt.Sprintf("marker 404\nflood [(403, %d)]\n", flood); out != want {
		t.Fatalf("the flood inside: %q, want %q", out, want)
	}

	r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
	if r.code != 0 {
		t.Fatalf("logs proxy:\n%s", r)
	}
	for line := range strings.Lines(r.stdout) {
		if len(line) > 4096 {
			t.Fatalf("an audit record of %d bytes: records are not bounded", len(line))
		}
	}
	recs := parseAudit(t, r.stdout)
	var sessions []string
	var denied, dropped int
	var markers []string
	for _, rec := range recs {
		if !slices.Contains(sessions, rec.Session) {
			sessions = append(sessions, rec.Session)
		}
		switch {
		case rec.Kind == "dropped":
			dropped += rec.Dropped
		case rec.Decision == "deny":
			denied++
			if rec.PathBytes != 60001 || len(rec.Path) > 1024 {
				t.Fatalf("a flood record's path: %d bytes kept, path_bytes %d; want at most 1024 kept and 60001", len(rec.Path), rec.PathBytes)
			}
		case rec.Decision == "allow":
			markers = append(markers, rec.Path)
		}
	}
	if want := []string{"/" + early, "/" + marker}; !slices.Equal(markers, want) {
		t.Errorf("allowed records after the flood: %q, want %q", markers, want)
	}
	if len(sessions) != 2 {
		t.Errorf("sessions in the log: %q, want 2", sessions)
	}
	if denied != budget || dropped != flood-budget {
		t.Errorf("%d denied records written and %d counted as dropped; want %d and %d", denied, dropped, budget, flood-budget)
	}
	text := run(t, p.dir, nil, "", "logs", "proxy")
	said := 0
	for _, m := range regexp.MustCompile(`(?m) (\d+) denied records? dropped `).FindAllStringSubmatch(text.stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		said += n
	}
	if said != flood-budget {
		t.Errorf("logs proxy says %d denied records were dropped, want %d", said, flood-budget)
	}

	// The follower saw every allowed record and the dropped marker, written last.
	var seen []string
	for {
		line := followed.next()
		var rec auditLine
		_ = json.Unmarshal([]byte(line), &rec)
		if rec.Decision == "allow" {
			seen = append(seen, rec.Path)
		}
		if rec.Kind == "dropped" && rec.Session == sessions[len(sessions)-1] {
			break
		}
	}
	if !slices.Contains(seen, "/"+marker) {
		t.Errorf("the follower missed the marker: it saw %q", seen)
	}
}

// recorder is a listener in an outside host's namespace that keeps every byte each
// connection sends before anything else reads them (TLS included: there the bytes are
// ciphertext, and a credential in them means it crossed in clear).
type recorder struct {
	mu  sync.Mutex
	raw bytes.Buffer
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

type teeConn struct {
	net.Conn
	r *recorder
}

func (c teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.mu.Lock()
	c.r.raw.Write(p[:n])
	c.r.mu.Unlock()
	return n, err
}

type teeListener struct {
	net.Listener
	r *recorder
}

func (l teeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return teeConn{c, l.r}, nil
}

// serveRecording serves HTTP on o's addr:port (TLS with a certificate from ca when ca is
// set), recording the raw bytes, and the Authorization each decrypted request carried
// ("PATH AUTH").
func serveRecording(t *testing.T, o *outside, port int, ca *testCA) (*recorder, func() []string) {
	t.Helper()
	rec := &recorder{}
	var mu sync.Mutex
	var auths []string
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "ok\n")
	})}
	ln := teeListener{listenIn(t, o.ns, net.JoinHostPort(o.addr, strconv.Itoa(port))), rec}
	if ca != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, o.addr)}}
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	t.Cleanup(func() { srv.Close() })
	return rec, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(auths)
	}
}

// TestCredentialOnlyOverTLS: a credential for an HTTPS host (no port in its host)
// leaves the proxy only inside TLS to that host, however the sandbox addresses it:
// plain HTTP to other ports or to 443, CONNECT then plaintext, an IPv4-mapped form,
// and Host headers naming it toward another host. Every listener records the raw bytes
// it receives; the token is in none of them, and the TLS origin saw it.
func TestCredentialOnlyOverTLS(t *testing.T) {
	requireRoot(t)
	credHost, other := newOutside(t), newOutside(t)
	ca := newTestCA(t)
	tlsRaw, tlsAuths := serveRecording(t, credHost, 443, ca)
	recorders := map[string]*recorder{"credhost:443 (raw)": tlsRaw}
	var plainAuths []func() []string
	for _, port := range []int{80, 8088} {
		r, a := serveRecording(t, credHost, port, nil)
		recorders[fmt.Sprintf("credhost:%d", port)] = r
		plainAuths = append(plainAuths, a)
	}
	otherRaw, otherAuths := serveRecording(t, other, 8088, nil)
	recorders["other:8088"] = otherRaw
	plainAuths = append(plainAuths, otherAuths)
	forEachIsolator(t, func(t *testing.T, iso string) {
		testCredentialOnlyOverTLS(t, iso, credHost, other, ca, recorders, tlsAuths, plainAuths)
	})
}

func testCredentialOnlyOverTLS(t *testing.T, iso string, credHost, other *outside, ca *testCA, recorders map[string]*recorder,
	tlsAuths func() []string, plainAuths []func() []string) {
	p := newProject(t)
	cfg := p.writeConfig(iso, "cred.toml", fmt.Sprintf(`[proxy]
mitm = true
[[proxy.credentials]]
host = "%s"
header = "Authorization"
value_env = "DSB_IT_TOKEN"
format = "Bearer {}"
`, credHost.addr))
	p.write("proj/origin-ca.pem", string(ca.pem))
	p.write("proj/raw.py", `import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode())
print(s.recv(100).decode("latin-1").split("\r\n")[0])
`)
	token := "ghp_IT" + randHex(16)
	before := map[string]int{}
	for name, r := range recorders {
		before[name] = len(r.bytes())
	}
	script := fmt.Sprintf(`A=%[1]s B=%[2]s
c() { printf '%%s %%s\n' "$1" "$(shift; curl -s -o /dev/null -w '%%{http_code}' -m 10 "$@")"; }
c tls https://$A/tls
c plain80 http://$A/plain80
c plain8088 http://$A:8088/plain8088
c plain443 http://$A:443/plain443
c mapped "http://[::ffff:$A]:8088/mapped"
c connect443 -p http://$A:443/connect443
c connect8088 -p http://$A:8088/connect8088
c hostgame -H "Host: $A" http://$B:8088/hostgame
c hostgame-tunnel -p -H "Host: $A" http://$B:8088/hostgame-tunnel
echo "abs-https $(python3 raw.py 'GET https://'$A'/abs-https HTTP/1.1\r\nHost: '$A'\r\nConnection: close\r\n\r\n')"
echo "abs-host $(python3 raw.py 'GET http://'$A':8088/abs-host HTTP/1.1\r\nHost: '$A':443\r\nConnection: close\r\n\r\n')"
`, credHost.addr, other.addr)
	r := run(t, p.dir, []string{"DSB_IT_TOKEN=" + token, "SSL_CERT_FILE=" + filepath.Join(p.dir, "origin-ca.pem")}, "",
		"--isolator="+iso, "--config="+cfg, "--egress=proxy", "--allow", credHost.addr, "--allow", other.addr, "--", "/bin/sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("sandbox:\n%s", r)
	}
	t.Logf("inside:\n%s", r.stdout)
	got := map[string]string{}
	for line := range strings.Lines(r.stdout) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		got[k] = v
	}
	if got["tls"] != "200" || !strings.HasPrefix(got["abs-https"], "HTTP/1.1 200") {
		t.Errorf("the credential's own HTTPS requests failed: %q", got)
	}
	if got["connect443"] == "200" {
		t.Errorf("plaintext inside a decrypted CONNECT to 443 was answered 200; want it refused")
	}
	for name, rec := range recorders {
		if raw := rec.bytes()[before[name]:]; bytes.Contains(raw, []byte(token)) {
			t.Errorf("%s received the token in clear:\n%.600s", name, raw[bytes.Index(raw, []byte(token))-min(bytes.Index(raw, []byte(token)), 300):])
		}
	}
	var viaTLS []string
	for _, a := range tlsAuths() {
		if path, auth, _ := strings.Cut(a, " "); auth == "Bearer "+token {
			viaTLS = append(viaTLS, path)
		}
	}
	if !slices.Contains(viaTLS, "/tls") || !slices.Contains(viaTLS, "/abs-https") {
		t.Errorf("the TLS origin did not get the token on /tls and /abs-https (it got it on %q): the test proves nothing", viaTLS)
	}
	for _, auths := range plainAuths {
		for _, a := range auths() {
			if strings.Contains(a, token) {
				t.Errorf("a plain-HTTP listener saw the token: %q", a)
			}
		}
	}
}

// connectScript makes raw proxy requests from inside: "CONNECT target" or "GET url",
// and prints "LABEL STATUS", plus "reached" when a tunnel's far end answers HOSTSVC.
const connectScript = `import socket, sys
def ask(label, line):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(line.encode() + b"\r\nHost: x\r\n\r\n")
    head = s.recv(4096).decode("latin-1")
    status = head.split(" ")[1] if head.startswith("HTTP/") else "none"
    reached = ""
    if line.startswith("CONNECT") and status == "200":
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        s.settimeout(5)
        try:
            reached = " reached" if b"HOSTSVC" in s.recv(4096) else ""
        except OSError:
            pass
    elif b"HOSTSVC" in head.encode("latin-1"):
        reached = " reached"
    s.close()
    print(label, status + reached)
for arg in sys.argv[1:]:
    label, line = arg.split("=", 1)
    ask(label, line)
`

func parseLabels(out string) map[string]string {
	got := map[string]string{}
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		got[k] = v
	}
	return got
}

// TestProxyTargetsAndSuggest: malformed targets (a wildcard, the unspecified address,
// a zone) are refused with 400 and never come back as suggestions; loopback,
// link-local and metadata addresses are never suggested and a private one only with a
// warning; an allow entry of 0.0.0.0, :: or loopback is a config error without the
// override, and with it still no way to the host's loopback.
func TestProxyTargetsAndSuggest(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	hs := newHostService(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testProxyTargetsAndSuggest(t, iso, o, hs) })
}

func testProxyTargetsAndSuggest(t *testing.T, iso string, o *outside, hs *hostService) {
	p := newProject(t)
	p.write("proj/ask.py", connectScript)
	port := strconv.Itoa(hs.port)
	args := []string{
		"wild=CONNECT *.com:443 HTTP/1.1",
		"unspec=CONNECT 0.0.0.0:" + port + " HTTP/1.1",
		"unspec6=CONNECT [::]:" + port + " HTTP/1.1",
		"zone=CONNECT [fe80::1%25en0]:443 HTTP/1.1",
		"getwild=GET http://*.com/ HTTP/1.1",
		"getunspec=GET http://0.0.0.0:" + port + "/ HTTP/1.1",
		"loop=CONNECT 127.0.0.1:" + port + " HTTP/1.1",
		"linklocal=CONNECT 169.254.10.1:443 HTTP/1.1",
		"metadata=CONNECT 169.254.169.254:80 HTTP/1.1",
		"private=CONNECT " + o.addr + ":8081 HTTP/1.1",
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + a + "'"
	}
	out := p.mustSandbox(iso, []string{"--egress=proxy"}, "python3 ask.py "+strings.Join(quoted, " "))
	got := parseLabels(out)
	want := map[string]string{"wild": "400", "unspec": "400", "unspec6": "400", "zone": "400", "getwild": "400", "getunspec": "400",
		"loop": "403", "linklocal": "403", "metadata": "403", "private": "403"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}

	r := run(t, p.dir, nil, "", "logs", "proxy", "--suggest")
	if r.code != 0 {
		t.Fatalf("logs proxy --suggest:\n%s", r)
	}
	var entries []string
	warned := false
	for line := range strings.Lines(r.stdout) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			warned = warned || strings.Contains(line, "WARNING") && strings.Contains(line, o.addr)
			continue
		}
		entries = append(entries, line)
	}
	if want := []string{strconv.Quote(o.addr+":8081") + ","}; !slices.Equal(entries, want) {
		t.Errorf("suggested entries %q, want only %q:\n%s", entries, want, r.stdout)
	}
	if !warned {
		t.Errorf("the private address is suggested without a warning:\n%s", r.stdout)
	}

	// An allow entry of 0.0.0.0, :: or a loopback address is a config error...
	for _, e := range []string{"0.0.0.0", "::", "127.0.0.1:" + port, "localhost"} {
		r := p.sandbox(iso, []string{"--egress=proxy", "--allow", e}, "echo ran")
		if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "egress.loopback_entries") {
			t.Errorf("--allow %s:\n%s", e, r)
		}
	}
	// ...and with the override, still no way to the host's loopback.
	cfg := p.writeConfig(iso, "loop.toml", "[egress]\nloopback_entries = \"ignore\"\n")
	r = run(t, p.dir, nil, "", "--isolator="+iso, "--config="+cfg, "--egress=proxy", "--allow", "0.0.0.0", "--allow", "127.0.0.1:"+port,
		"--allow", "localhost", "--", "python3", "ask.py", "unspec=CONNECT 0.0.0.0:"+port+" HTTP/1.1", "loop=CONNECT 127.0.0.1:"+port+" HTTP/1.1",
		"name=CONNECT localhost:"+port+" HTTP/1.1", "get=GET http://127.0.0.1:"+port+"/ HTTP/1.1")
	if r.code != 0 || !strings.Contains(r.stderr, "ignoring") {
		t.Fatalf("with the override:\n%s", r)
	}
	got = parseLabels(r.stdout)
	for k, w := range map[string]string{"unspec": "400", "loop": "403", "name": "403", "get": "403"} {
		if got[k] != w {
			t.Errorf("with the override, %s: %q, want %q (reaching the host's loopback: %v)", k, got[k], w, strings.Contains(got[k], "reached"))
		}
	}
}

// TestSocketDirFallbackHostile: without XDG_RUNTIME_DIR and with a state path too
// long for socket paths, the socket directory falls back to the shared temporary
// directory. Another local user's pre-created /tmp/devsandbox-<uid>/<id> (mode 0777)
// neither stops the run nor holds its sockets.
func TestSocketDirFallbackHostile(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testSocketDirFallbackHostile(t, iso, o) })
}

func testSocketDirFallbackHostile(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	state := p.path("state-" + strings.Repeat("s", 80))
	p.mkdir(filepath.Base(state))
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	parent := fmt.Sprintf("/tmp/devsandbox-%d", it.uid)
	const nobody = 65534
	if _, err := os.Lstat(parent); os.IsNotExist(err) {
		if err := os.Mkdir(parent, 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(parent, 0o777)
		_ = os.Chown(parent, nobody, nobody)
		t.Cleanup(func() { os.RemoveAll(parent) })
	}
	hostile := filepath.Join(parent, id)
	if err := os.Mkdir(hostile, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(hostile, 0o777)
	if err := os.Chown(hostile, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostile) })

	mine := func() []string {
		dirs, _ := filepath.Glob(fmt.Sprintf("/tmp/devsandbox-%d-*", it.uid))
		var out []string
		for _, d := range dirs {
			var st syscall.Stat_t
			if err := syscall.Lstat(d, &st); err == nil && int(st.Uid) == it.uid && st.Mode&0o777 == 0o700 && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				out = append(out, d)
			}
		}
		return out
	}
	before := mine()
	for i := range 2 {
		r := run(t, p.dir, []string{"XDG_STATE_HOME=" + state}, "", "--isolator="+iso, "--egress=proxy", "--allow", o.addr+":8080",
			"--", "/bin/sh", "-c", fmt.Sprintf("curl -s -m 5 http://%s:8080/", o.addr))
		if r.code != 0 || r.stdout != "OUTSIDE\n" {
			t.Fatalf("run %d with a hostile socket directory fallback:\n%s", i+1, r)
		}
		if names, _ := os.ReadDir(hostile); len(names) != 0 {
			t.Errorf("the run used the other user's directory: %v", names)
		}
		// It used a private directory instead (mode 0700, the test user's), the same
		// one for every run of the project.
		var added []string
		for _, d := range mine() {
			if !slices.Contains(before, d) {
				added = append(added, d)
				t.Cleanup(func() { os.RemoveAll(d) })
			}
		}
		if len(added) != 1 {
			t.Errorf("run %d: new private socket directories /tmp/devsandbox-%d-*: %q, want one", i+1, it.uid, added)
		}
	}
}

// TestLogsEscapeFormatCharacters: a path with bidi controls and other format
// characters reaches no output of `devsandbox logs proxy` raw: text, --json, --follow.
func TestLogsEscapeFormatCharacters(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		// U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+200B ZERO WIDTH SPACE.
		p.mustSandbox(iso, []string{"--egress=proxy", "--allow", o.addr + ":8080"},
			fmt.Sprintf(`curl -s -o /dev/null -m 5 'http://%s:8080/evil%%E2%%80%%AEtxt.exe%%E2%%81%%A6%%E2%%80%%8Bx'`, o.addr))
		bad := func(s string) bool { return strings.ContainsAny(s, "\u202e\u2066\u200b\x1b") }
		for _, args := range [][]string{{"logs", "proxy"}, {"logs", "proxy", "--json"}} {
			r := run(t, p.dir, nil, "", args...)
			if r.code != 0 || !strings.Contains(r.stdout, "evil") || bad(r.stdout) {
				t.Errorf("%v prints format characters raw:\n%q", args, r.stdout)
			}
		}
		for _, extra := range [][]string{nil, {"--json"}} {
			cmd := command(t.Context(), p.dir, baseEnv(), append([]string{"logs", "proxy", "--follow"}, extra...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := bufio.NewReader(out)
			l, err := line.ReadString('\n')
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if err != nil || !strings.Contains(l, "evil") || bad(l) {
				t.Errorf("logs proxy --follow %v: %q, %v", extra, l, err)
			}
		}
	})
}
