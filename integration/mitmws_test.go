//go:build integration

package integration

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// wsH2Origin is an HTTPS server (HTTP/1.1 and HTTP/2) on an outside host. It records
// "PATH PROTO AUTHORIZATION" per request; /ws takes a WebSocket upgrade, answers 101
// with the Authorization it got in X-Echo, sends it again in a first text message cut
// into two frames inside the value, then echoes each text frame the client sends;
// anything else answers with the Authorization and the protocol.
type wsH2Origin struct {
	mu   sync.Mutex
	seen []string
}

func (o *wsH2Origin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

func (o *wsH2Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	o.mu.Lock()
	o.seen = append(o.seen, r.URL.Path+" "+r.Proto+" "+auth)
	o.mu.Unlock()
	if r.URL.Path != "/ws" {
		w.Header().Set("X-Echo", auth)
		io.WriteString(w, "echo:"+auth+" proto:"+r.Proto)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	frame := func(p string) string { return string([]byte{0x81, byte(len(p))}) + p }
	// The first message in two frames cut inside the value, as gorilla/websocket cuts
	// a message longer than its write buffer: the client joins them.
	hello := "handshake had " + auth + " extensions=" + r.Header.Get("Sec-WebSocket-Extensions")
	cut := len("handshake had ") + len(auth)/2 + 5
	io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Echo: "+auth+"\r\n\r\n"+
		string([]byte{0x01, byte(cut)})+hello[:cut]+string([]byte{0x80, byte(len(hello) - cut)})+hello[cut:])
	for {
		var h [2]byte
		if _, err := io.ReadFull(brw, h[:]); err != nil {
			return
		}
		var key [4]byte
		p := make([]byte, h[1]&0x7f)
		if _, err := io.ReadFull(brw, key[:]); err != nil {
			return
		}
		if _, err := io.ReadFull(brw, p); err != nil {
			return
		}
		for i := range p {
			p[i] ^= key[i%4]
		}
		io.WriteString(c, frame(string(p)))
	}
}

// wsClient is a WebSocket client in Python's standard library: it tunnels through the
// sandbox's HTTPS_PROXY by hand (CONNECT, then TLS with ALPN http/1.1, trusting
// SSL_CERT_FILE), upgrades /ws sending the placeholder, and prints what it got.
const wsClient = `import base64, os, socket, ssl, sys, urllib.parse
host, msg = sys.argv[1], sys.argv[2]
p = urllib.parse.urlsplit(os.environ.get("HTTPS_PROXY") or os.environ["https_proxy"])
s = socket.create_connection((p.hostname, p.port or 80), 10)
auth = ""
if p.username:
    up = urllib.parse.unquote(p.username) + ":" + urllib.parse.unquote(p.password or "")
    auth = "Proxy-Authorization: Basic " + base64.b64encode(up.encode()).decode() + "\r\n"
s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n%s\r\n" % (host, host, auth)).encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
print("ws-connect", head.split(b" ")[1].decode())
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
ctx.set_alpn_protocols(["http/1.1"])
t = ctx.wrap_socket(s, server_hostname=host)
t.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Extensions: permessage-deflate\r\nAuthorization: Bearer %s\r\n\r\n"
           % (host, os.environ["DSB_IT_TOKEN"])).encode())
f = t.makefile("rb")
status = f.readline().split(b" ")[1].decode()
echo = ""
while True:
    line = f.readline().strip()
    if not line:
        break
    k, _, v = line.decode().partition(":")
    if k.lower() == "x-echo":
        echo = v.strip()
print("ws-status", status)
print("ws-xecho", echo)
def frame():
    m = b""
    while True:
        h = f.read(2)
        m += f.read(h[1] & 0x7f)
        if h[0] & 0x80:
            return m.decode()
print("ws-hello", frame())
for m in ("ping", msg):
    key = os.urandom(4)
    b = m.encode()
    t.sendall(bytes([0x81, 0x80 | len(b)]) + key + bytes(c ^ key[i % 4] for i, c in enumerate(b)))
    print("ws-echo", frame())
sys.stdout.flush()
`

// TestMITMWebSocketH2 runs clients in a sandbox with proxy.mitm and a credential for an
// outside HTTPS host, and checks that a WebSocket upgrade (Python, over HTTP/1.1) and
// curl --http2 reach it with the real token in place of the placeholder they send; that
// the echoes come back masked (the 101's header, the first message, which the host
// cuts into two frames inside the value: the client read it joined before) and a
// message ending in the token's first bytes comes back at once; that the upgrade
// offered no extension;
// that an HTTP/2 request whose :authority names another host is refused (421) and
// reaches nothing; and that the audit log records the 101 with the credential.
//
// As TestMITMCredentialInjection, for bwrap and the docker variants: krun's proxy is
// the host process bwrap has (the same code on the same side of the sandbox).
func TestMITMWebSocketH2(t *testing.T) {
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
			testMITMWebSocketH2(t, iso)
		})
	}
}

func testMITMWebSocketH2(t *testing.T, iso string) {
	credHost, other := newOutside(t), newOutside(t)
	originCA := newTestCA(t)
	origin := &wsH2Origin{}
	srv := &http.Server{Handler: origin, TLSConfig: &tls.Config{Certificates: []tls.Certificate{originCA.issue(t, credHost.addr)}},
		ErrorLog: log.New(io.Discard, "", 0)}
	go srv.ServeTLS(listenIn(t, credHost.ns, credHost.addr+":443"), "", "")
	t.Cleanup(func() { srv.Close() })

	p := newProject(t)
	p.write("proj/origin-ca.pem", string(originCA.pem))
	p.write("proj/ws.py", wsClient)
	cfg := p.writeConfig(iso, "mitm.toml", fmt.Sprintf(`[proxy]
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
	token := "ghp_WS" + hex.EncodeToString(rnd[:])
	script := fmt.Sprintf(`set -u
A=%[1]s B=%[2]s
echo "placeholder $DSB_IT_TOKEN"
echo "h2 $(curl --http2 -sS -m 10 -D /tmp/h -o /tmp/b -w '%%{http_version} %%{http_code}' -H "Authorization: Bearer $DSB_IT_TOKEN" https://$A/echo) $(cat /tmp/b) $(grep -i '^x-echo' /tmp/h | tr -d '\r')"
echo "h2-authority $(curl --http2 -s -o /dev/null -m 10 -w '%%{http_version} %%{http_code}' -H "Host: $B" https://$A/echo)"
python3 %[3]s $A "ends %[4]s" 2>&1
`, credHost.addr, other.addr, filepath.Join(p.dir, "ws.py"), token[:6])
	r := run(t, p.dir, []string{"DSB_IT_TOKEN=" + token, "SSL_CERT_FILE=" + filepath.Join(p.dir, "origin-ca.pem")}, "",
		"--isolator="+iso, "--config="+cfg, "--egress=proxy", "--allow", credHost.addr, "--allow", other.addr,
		"--", "/bin/sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("devsandbox: %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("inside the sandbox:\n%s", r.stdout)
	if strings.Contains(r.stdout, token) || strings.Contains(r.stderr, token) {
		t.Errorf("the token reached the sandbox's output")
	}
	got := map[string]string{}
	for line := range strings.Lines(r.stdout) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if _, ok := got[k]; !ok {
			got[k] = v
		} else {
			got[k] += "|" + v
		}
	}
	mask := strings.Repeat("*", len(token))
	placeholder := got["placeholder"]
	if len(placeholder) == len(token) {
		mask = placeholder
	}
	want := map[string]string{
		"h2":           "2 200 echo:Bearer " + mask + " proto:HTTP/1.1 x-echo: Bearer " + mask, // HTTP/2 names headers in lower case
		"h2-authority": "2 421",
		"ws-connect":   "200",
		"ws-status":    "101",
		"ws-xecho":     "Bearer " + mask,
		"ws-hello":     "handshake had Bearer " + mask + " extensions=",
		"ws-echo":      "ping|ends " + token[:6],
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	// The origin saw the token on both requests, the upgrade over HTTP/1.1; the
	// misdirected request never came.
	seen := origin.requests()
	if wantSeen := []string{"/echo HTTP/1.1 Bearer " + token, "/ws HTTP/1.1 Bearer " + token}; !slices.Equal(seen, wantSeen) {
		t.Errorf("the origin saw %q, want %q", seen, wantSeen)
	}

	logs := run(t, p.dir, nil, "", "logs", "proxy", "--json")
	var lines []string
	for line := range strings.Lines(logs.stdout) {
		var rec struct {
			Method, Host, Path, Decision, Rule, Credential string
			Port, Status                                   int
			BytesUp                                        int64 `json:"bytes_up"`
			BytesDown                                      int64 `json:"bytes_down"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		if strings.Contains(line, token) || placeholder != "" && strings.Contains(line, placeholder) {
			t.Errorf("the audit log holds a secret: %s", line)
		}
		if rec.Path == "/ws" && (rec.BytesUp == 0 || rec.BytesDown == 0) {
			t.Errorf("the upgrade's record counts no bytes: %s", line)
		}
		lines = append(lines, fmt.Sprintf("%s %s %s:%d%s %d %s %s", rec.Decision, rec.Method, rec.Host, rec.Port, rec.Path, rec.Status, rec.Rule, rec.Credential))
	}
	for _, w := range []string{
		fmt.Sprintf("allow GET %s:443/ws 101 %s Authorization", credHost.addr, credHost.addr),
		fmt.Sprintf("allow GET %s:443/echo 200 %s Authorization", credHost.addr, credHost.addr),
		fmt.Sprintf("deny GET %s:443/echo 421 misdirected ", credHost.addr),
	} {
		if !slices.Contains(lines, w) {
			t.Errorf("audit log lacks %q:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}
