package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

// fakeResolver maps test names to addresses; anything else does not resolve.
type fakeResolver struct {
	names map[string][]netip.Addr
	calls atomic.Int64
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.calls.Add(1)
	if a, ok := f.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// loopback resolves every name to 127.0.0.1.
func loopback(names ...string) *fakeResolver {
	f := &fakeResolver{names: map[string][]netip.Addr{}}
	for _, n := range names {
		f.names[n] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return f
}

// testNet resolves every name to 192.0.2.10 (TEST-NET-1: public to the policy, and
// never dialed by the tests that use it).
func testNet(names ...string) *fakeResolver {
	f := &fakeResolver{names: map[string][]netip.Addr{}}
	for _, n := range names {
		f.names[n] = []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	}
	return f
}

// harness is a Server listening on a Unix socket and a TCP port, shut down at cleanup.
type harness struct {
	srv    *Server
	sock   string
	tcp    string // host:port of the TCP endpoint
	logDir string
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	dir := t.TempDir()
	if cfg.Policy == nil {
		cfg.Policy = mustPolicy(t, nil, nil, "deny")
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(dir, "log")
	}
	if cfg.Session == "" {
		cfg.Session = "sess-1"
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: srv, sock: filepath.Join(dir, "proxy.sock"), logDir: cfg.LogDir}
	if err := srv.ListenUnix(h.sock); err != nil {
		t.Fatal(err)
	}
	if h.tcp, err = srv.ListenTCP(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return h
}

// entries parses egress entries, failing the test on a bad one.
func entries(t testing.TB, ss ...string) []egress.Entry {
	t.Helper()
	es, err := egress.ParseEntries(ss)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// refPatterns parses git push patterns, failing the test on a bad one.
func refPatterns(t testing.TB, ss ...string) []egress.RefPattern {
	t.Helper()
	var out []egress.RefPattern
	for _, s := range ss {
		p, err := egress.ParseRefPattern(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func mustPolicy(t testing.TB, allow, deny []string, def string) *Policy {
	t.Helper()
	p, err := NewPolicy(entries(t, allow...), entries(t, deny...), def)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unixClient is an HTTP client whose proxy is the harness's Unix socket.
// Its idle connections close at cleanup, before the harness shuts down.
func (h *harness) unixClient(t testing.TB, tlsClient *http.Client) *http.Client {
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:1"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", h.sock)
		},
	}
	if tlsClient != nil {
		tr.TLSClientConfig = tlsClient.Transport.(*http.Transport).TLSClientConfig
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// dialUnix opens a raw connection to the proxy's Unix socket.
func (h *harness) dialUnix(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

func (h *harness) authHeader() string {
	return "Basic " + base64.StdEncoding.EncodeToString(h.srv.cred)
}

// rawConnect sends "CONNECT target" (with extra header lines) on c and reads the
// response head; the body, if any, is read whole.
func rawConnect(t *testing.T, c net.Conn, target string, extra ...string) (*http.Response, string, *bufio.Reader) {
	t.Helper()
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	for _, e := range extra {
		req += e + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return resp, body, br
}

// countingListener is a TCP target that counts the connections it accepts and echoes.
type countingListener struct {
	net.Listener
	accepts atomic.Int64
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cl.accepts.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return cl
}

func (cl *countingListener) port() string {
	return cl.Addr().(*net.TCPAddr).AddrPort().String()[strings.LastIndexByte(cl.Addr().String(), ':')+1:]
}

// eventually polls cond until it holds or the bound passes.
func eventually(t *testing.T, bound time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// endsWithin waits for h's handlers to end and fails the test unless they ended
// within bound of start; what it was waiting for is what says why.
func endsWithin(t *testing.T, h *harness, start time.Time, bound time.Duration, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound+15*time.Second)
	defer cancel()
	if err := h.srv.track.wait(ctx); err != nil {
		t.Fatalf("%s: the handler still runs %v later", what, time.Since(start).Round(time.Millisecond))
	}
	took := time.Since(start)
	if took > bound {
		t.Fatalf("%s: the handler ended %v later, want at most %v", what, took.Round(time.Millisecond), bound)
	}
	t.Logf("%s: the handler ended %v later", what, took.Round(time.Millisecond))
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// logFile is the path of the harness's session log file.
func (h *harness) logFile(t *testing.T) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(h.logDir, audit.LogSubdir, "*-"+h.srv.cfg.Session+".jsonl"))
	if len(names) != 1 {
		t.Fatalf("session log files: %v, want one", names)
	}
	return names[0]
}
