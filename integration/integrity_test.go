//go:build integration

package integration

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The proxy's own integrity: what the sandbox sends cannot choose whether a credential
// crosses the network in clear, turn a malformed target into a suggestion, or reach
// the host's loopback; and the socket directory cannot be taken over by another local
// user.

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
// neither stops the run nor holds its sockets. bwrap's proxy binds no socket (the
// init hands it its listener), so a bwrap run makes the directory only for the relay
// of a published port, and without one makes none.
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
	args := []string{"--isolator=" + iso, "--egress=proxy", "--allow", o.addr + ":8080"}
	curl := []string{"--", "/bin/sh", "-c", fmt.Sprintf("curl -s -m 5 http://%s:8080/", o.addr)}
	if iso == "bwrap" {
		r := run(t, p.dir, []string{"XDG_STATE_HOME=" + state}, "", append(args, curl...)...)
		if r.code != 0 || r.stdout != "OUTSIDE\n" {
			t.Fatalf("bwrap run without a published port:\n%s", r)
		}
		if added := slices.DeleteFunc(mine(), func(d string) bool { return slices.Contains(before, d) }); len(added) != 0 {
			t.Errorf("a bwrap run that binds no socket made socket directories %q", added)
		}
		args = append(args, "--publish", fmt.Sprintf("%d:8000", freePort(t)))
	}
	for i := range 2 {
		r := run(t, p.dir, []string{"XDG_STATE_HOME=" + state}, "", append(args, curl...)...)
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
		// docker keeps its egress services in the engine and needs no socket
		// directory on this host at all (guarantee 11).
		want := 1
		if strings.HasPrefix(iso, "docker") {
			want = 0
		}
		if len(added) != want {
			t.Errorf("run %d: new private socket directories /tmp/devsandbox-%d-*: %q, want %d", i+1, it.uid, added, want)
		}
	}
}
