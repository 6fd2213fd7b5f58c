package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// rawRecorder is a listener that keeps every byte each connection sends it, before
// anything parses them; TLS, when set, is served over the recorded bytes.
type rawRecorder struct {
	ln  net.Listener
	mu  sync.Mutex
	raw bytes.Buffer
}

type recordedConn struct {
	net.Conn
	r *rawRecorder
}

func (c recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.mu.Lock()
	c.r.raw.Write(p[:n])
	c.r.mu.Unlock()
	return n, err
}

func (r *rawRecorder) Accept() (net.Conn, error) {
	c, err := r.ln.Accept()
	if err != nil {
		return nil, err
	}
	return recordedConn{c, r}, nil
}
func (r *rawRecorder) Close() error   { return r.ln.Close() }
func (r *rawRecorder) Addr() net.Addr { return r.ln.Addr() }

func (r *rawRecorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

// newRecorder serves handler on a recording listener, over TLS with cert when set.
func newRecorder(t *testing.T, handler http.Handler, cert *tls.Certificate) *rawRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rawRecorder{ln: ln}
	srv := &http.Server{Handler: handler, ErrorLog: log.New(io.Discard, "", 0)}
	if cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
		go srv.ServeTLS(r, "", "")
	} else {
		go srv.Serve(r)
	}
	t.Cleanup(func() { srv.Close() })
	return r
}

// TestCredentialOnlyOverTLS: a credential for an HTTPS host (no scheme, no port)
// leaves the proxy only inside TLS the proxy speaks to that host, for every way a
// client can address the host. Every upstream port is a listener recording the raw
// bytes it gets; the token is in none of them, and the TLS origin got it.
func TestCredentialOnlyOverTLS(t *testing.T) {
	var mu sync.Mutex
	var viaTLS []string
	originCA := newTestCA(t)
	cert := issue(t, originCA, "example.com", "other.test")
	tlsOrigin := newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		viaTLS = append(viaTLS, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "ok")
	}), &cert)
	plain := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	byPort := map[string]*rawRecorder{"443": tlsOrigin, "80": newRecorder(t, plain, nil), "8080": newRecorder(t, plain, nil)}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		r, ok := byPort[port]
		if !ok {
			return nil, fmt.Errorf("no listener for port %s", port)
		}
		return (&net.Dialer{}).DialContext(ctx, network, r.Addr().String())
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(originCA.CertPEM)
	proxyCA := newTestCA(t)
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"example.com", "other.test"}, nil, "deny"), Resolver: testNet("example.com", "other.test"), Dial: dial,
		RootCAs: roots, CA: &proxyCA.TLS, Credentials: []Credential{cred}})

	clientRoots := x509.NewCertPool()
	clientRoots.AppendCertsFromPEM(proxyCA.CertPEM)
	https := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:1"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", h.sock)
		},
		TLSClientConfig: &tls.Config{RootCAs: clientRoots},
	}}
	if code, _ := get(t, https, "https://example.com/tls"); code != 200 {
		t.Fatalf("the credential's own HTTPS request: %d", code)
	}
	https.CloseIdleConnections()

	// Raw requests on the proxy's socket, each on a connection of its own.
	raw := func(req string) string {
		t.Helper()
		c := h.dialUnix(t)
		defer c.Close()
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: strings.Fields(req)[0]})
		if err != nil {
			return "no answer: " + err.Error()
		}
		return strconv.Itoa(resp.StatusCode)
	}
	// CONNECT, then plain HTTP inside the tunnel.
	tunnel := func(target, inner string) string {
		t.Helper()
		c := h.dialUnix(t)
		defer c.Close()
		resp, _, br := rawConnect(t, c, target)
		if resp.StatusCode != 200 {
			return "CONNECT " + resp.Status
		}
		io.WriteString(c, inner)
		in, err := http.ReadResponse(br, nil)
		if err != nil {
			return "no answer"
		}
		return strconv.Itoa(in.StatusCode)
	}
	got := map[string]string{
		"abs-https":     raw("GET https://example.com/abs-https HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"plain80":       raw("GET http://example.com/plain80 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"plain8080":     raw("GET http://example.com:8080/plain8080 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"plain443":      raw("GET http://example.com:443/plain443 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"case-and-dot":  raw("GET http://EXAMPLE.com.:8080/case HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"host-header":   raw("GET http://other.test:8080/host-header HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"host-header-2": raw("GET http://other.test:80/host-header-2 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
		"connect443":    tunnel("example.com:443", "GET /connect443 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"connect8080":   tunnel("example.com:8080", "GET /connect8080 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		"connect-other": tunnel("other.test:443", "GET /connect-other HTTP/1.1\r\nHost: example.com\r\n\r\n"),
	}
	want := map[string]string{"abs-https": "200", "plain80": "200", "plain8080": "200", "plain443": "400", "case-and-dot": "200",
		"host-header": "200", "host-header-2": "200", "connect443": "400", "connect8080": "200", "connect-other": "400"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
	h.shutdown(t)
	for port, r := range byPort {
		if raw := r.bytes(); bytes.Contains(raw, []byte(testToken)) {
			t.Errorf("port %s received the token in clear:\n%s", port, raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/tls Bearer " + testToken, "/abs-https Bearer " + testToken}; strings.Join(viaTLS, "\n") != strings.Join(want, "\n") {
		t.Errorf("the TLS origin saw:\n%s\nwant\n%s", strings.Join(viaTLS, "\n"), strings.Join(want, "\n"))
	}
	refused := 0
	for _, r := range records(t, h) {
		if r.Rule == audit.RuleCleartext && r.Status == 400 {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d cleartext refusals logged, want 2 (connect443, connect-other)", refused)
	}
}
