package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// origin is a local HTTP(S) server counting the requests it serves.
type origin struct {
	*httptest.Server
	hits atomic.Int64
}

func newOrigin(t testing.TB, tls bool, h http.HandlerFunc) *origin {
	t.Helper()
	o := &origin{}
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h(w, r)
	})
	o.Server = httptest.NewUnstartedServer(wrapped)
	o.Config.ErrorLog = log.New(io.Discard, "", 0) // dropped tunnels end TLS handshakes early
	if tls {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

func (o *origin) port() string {
	u, _ := url.Parse(o.URL)
	return u.Port()
}

func hello(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestForwardHTTP(t *testing.T) {
	o := newOrigin(t, false, hello)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test", "other.test")})
	code, body := get(t, h.unixClient(t, nil), "http://origin.test:"+o.port()+"/x")
	if code != 200 || body != "hello" {
		t.Errorf("got %d %q, want 200 hello", code, body)
	}
}

func TestForwardHTTPDenied(t *testing.T) {
	o := newOrigin(t, false, hello)
	h := newHarness(t, Config{Policy: mustPolicy(t, nil, nil, "deny"), Resolver: testNet("origin.test")})
	code, body := get(t, h.unixClient(t, nil), "http://origin.test:"+o.port()+"/x")
	want := "devsandbox proxy: GET origin.test:" + o.port() + ` refused by rule "default": ` +
		"no allow entry matches and the proxy default is deny.\n" +
		"To allow it, run devsandbox with --allow origin.test:" + o.port() + " (or add it to egress.allow).\n"
	if code != http.StatusForbidden || body != want {
		t.Errorf("got %d\n%s\nwant 403\n%s", code, body, want)
	}
	if o.hits.Load() != 0 {
		t.Errorf("origin served %d requests, want 0", o.hits.Load())
	}
}

func TestConnectTLS(t *testing.T) {
	o := newOrigin(t, true, hello)
	// httptest's certificate is valid for example.com, which resolves to 127.0.0.1 here.
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"example.com"}, nil, "deny"), Resolver: loopback("example.com")})
	code, body := get(t, h.unixClient(t, o.Client()), "https://example.com:"+o.port()+"/")
	if code != 200 || body != "hello" {
		t.Errorf("got %d %q, want 200 hello", code, body)
	}
}

func TestConnectDeniedSendsNothing(t *testing.T) {
	target := newCountingListener(t)
	port := target.port()
	tests := []struct {
		name   string
		policy *Policy
		host   string
		want   string
	}{
		{"deny entry", mustPolicy(t, []string{"*.test"}, []string{"blocked.test"}, "allow"), "blocked.test",
			"devsandbox proxy: CONNECT blocked.test:" + port + ` refused by rule "blocked.test": it matches a deny entry.` + "\n" +
				`A deny entry wins over every allow entry: remove "blocked.test" from egress.deny to allow it.` + "\n"},
		{"default deny", mustPolicy(t, nil, nil, "deny"), "other.test",
			"devsandbox proxy: CONNECT other.test:" + port + ` refused by rule "default": no allow entry matches and the proxy default is deny.` + "\n" +
				"To allow it, run devsandbox with --allow other.test:" + port + " (or add it to egress.allow).\n"},
		{"rebinding to loopback", mustPolicy(t, nil, nil, "allow"), "rebind.test",
			"devsandbox proxy: CONNECT rebind.test:" + port + ` refused by rule "private address": rebind.test resolves to 127.0.0.1, a loopback address.` + "\n" +
				"To allow it, run devsandbox with --allow rebind.test:" + port + " (or add it to egress.allow).\n"},
		{"wildcard does not name loopback", mustPolicy(t, []string{"*.test"}, nil, "allow"), "rebind.test",
			"devsandbox proxy: CONNECT rebind.test:" + port + ` refused by rule "private address": rebind.test resolves to 127.0.0.1, a loopback address.` + "\n" +
				"To allow it, run devsandbox with --allow rebind.test:" + port + " (or add it to egress.allow).\n"},
		{"loopback literal", mustPolicy(t, nil, nil, "allow"), "127.0.0.1",
			"devsandbox proxy: CONNECT 127.0.0.1:" + port + ` refused by rule "private address": 127.0.0.1 is a loopback address.` + "\n" +
				"To allow it, run devsandbox with --allow 127.0.0.1:" + port + " (or add it to egress.allow).\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := loopback("blocked.test", "rebind.test")
			res.names["other.test"] = addrs("192.0.2.10")
			h := newHarness(t, Config{Policy: tt.policy, Resolver: res})
			resp, body, _ := rawConnect(t, h.dialUnix(t), tt.host+":"+port)
			if resp.StatusCode != http.StatusForbidden || body != tt.want {
				t.Errorf("got %d\n%s\nwant 403\n%s", resp.StatusCode, body, tt.want)
			}
		})
	}
	if n := target.accepts.Load(); n != 0 {
		t.Errorf("the target accepted %d connections, want 0", n)
	}
}

func TestConnectAllowedLoopbackByName(t *testing.T) {
	target := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"rebind.test:" + target.port()}, nil, "deny"), Resolver: loopback("rebind.test")})
	c := h.dialUnix(t)
	resp, _, br := rawConnect(t, c, "rebind.test:"+target.port())
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Errorf("echo = %q, %v", buf, err)
	}
}

// A client may send its first bytes in the same write as CONNECT; the tunnel must
// start with them.
func TestConnectEarlyBytes(t *testing.T) {
	target := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"echo.test"}, nil, "deny"), Resolver: loopback("echo.test")})
	c := h.dialUnix(t)
	hostport := "echo.test:" + target.port()
	io.WriteString(c, "CONNECT "+hostport+" HTTP/1.1\r\nHost: "+hostport+"\r\n\r\nearly")
	want := "HTTP/1.1 200 Connection established\r\n\r\nearly"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Errorf("read %q, %v; want %q", got, err, want)
	}
}

func TestUnixSocketMode(t *testing.T) {
	h := newHarness(t, Config{})
	fi, err := os.Stat(h.sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
}

func TestListenUnixRefusesNonSocket(t *testing.T) {
	h := newHarness(t, Config{})
	path := h.logDir + "/file"
	os.WriteFile(path, nil, 0o600)
	if err := h.srv.ListenUnix(path); err == nil {
		t.Error("ListenUnix over a regular file succeeded")
	}
}

// TestServeInherited: Serve answers on a listener bound elsewhere, without a
// credential, and Shutdown closes it but leaves its socket file to its owner.
func TestServeInherited(t *testing.T) {
	o := newOrigin(t, false, hello)
	srv, err := New(Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test", "other.test")})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: srv, sock: filepath.Join(t.TempDir(), "s")}
	ln, err := net.Listen("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	srv.Serve(ln)
	c := h.unixClient(t, nil)
	if code, body := get(t, c, "http://origin.test:"+o.port()+"/"); code != 200 || body != "hello" {
		t.Errorf("allowed: %d %q", code, body)
	}
	if code, _ := get(t, c, "http://other.test:"+o.port()+"/"); code != 403 {
		t.Errorf("denied: %d", code)
	}
	c.CloseIdleConnections()
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.sock); err != nil {
		t.Errorf("Shutdown removed the inherited socket: %v", err)
	}
	if c, err := net.Dial("unix", h.sock); err == nil {
		c.Close()
		t.Error("the listener still accepts after Shutdown")
	}
}

func TestTCPRequiresCredential(t *testing.T) {
	o := newOrigin(t, false, hello)
	target := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test", "echo.test"}, nil, "deny"),
		Resolver: loopback("origin.test", "echo.test")})
	wrong := "Basic " + "ZGV2c2FuZGJveDp3cm9uZw==" // devsandbox:wrong
	for _, auth := range []string{"", wrong, "Bearer " + h.srv.secret} {
		c, err := net.Dial("tcp", h.tcp)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var extra []string
		if auth != "" {
			extra = append(extra, "Proxy-Authorization: "+auth)
		}
		resp, _, br := rawConnect(t, c, "echo.test:"+target.port(), extra...)
		if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") != `Basic realm="devsandbox"` {
			t.Errorf("CONNECT with %q: %d %v, want 407 with a Basic challenge", auth, resp.StatusCode, resp.Header)
		}
		req, _ := http.NewRequest("GET", "http://origin.test:"+o.port()+"/", nil)
		if auth != "" {
			req.Header.Set("Proxy-Authorization", auth)
		}
		req.WriteProxy(c)
		resp, err = http.ReadResponse(br, req)
		if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
			t.Errorf("GET with %q: %v %v, want 407", auth, resp, err)
		}
	}
	if o.hits.Load() != 0 || target.accepts.Load() != 0 {
		t.Errorf("forwarded without the credential: %d requests, %d connections", o.hits.Load(), target.accepts.Load())
	}
	// With the credential from Env, both work.
	pu, _ := url.Parse(h.srv.Env()["HTTPS_PROXY"])
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	if code, body := get(t, c, "http://origin.test:"+o.port()+"/"); code != 200 || body != "hello" {
		t.Errorf("authenticated GET: %d %q", code, body)
	}
	conn, _ := net.Dial("tcp", h.tcp)
	defer conn.Close()
	if resp, _, _ := rawConnect(t, conn, "echo.test:"+target.port(), "Proxy-Authorization: "+h.authHeader()); resp.StatusCode != 200 {
		t.Errorf("authenticated CONNECT: %d", resp.StatusCode)
	}
}

func TestNonProxyRequest(t *testing.T) {
	h := newHarness(t, Config{})
	c := h.dialUnix(t)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(newReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%v %v, want 400", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(b), "devsandbox proxy: not a proxy request") {
		t.Errorf("body %q", b)
	}
}
