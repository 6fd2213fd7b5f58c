package proxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/ca"
)

// mitmSetup is a Server with a test CA in front of a TLS origin. Every upstream dial
// to port 443 reaches the origin, so hosts can be named as clients name them.
type mitmSetup struct {
	h      *harness
	origin *origin
	ca     *ca.CA
	seen   chan *http.Request // what the origin received
}

const (
	testToken       = "ghp_realTOKENvalue0123456789abcdefABCDEF"
	testPlaceholder = "devsandbox-placeholder-000111222333444555666777888999"
)

func newTestCA(t testing.TB) *ca.CA {
	t.Helper()
	c, err := ca.LoadOrCreate(t.TempDir(), "test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newMITM starts the origin with handler (nil: it echoes the Authorization header it
// got, in a header and in the body) and a Server decrypting with a test CA. cfg's
// Policy, Resolver and Dial default to: allow example.com and other.test, both
// resolving to 127.0.0.1, port 443 dialled to the origin.
func newMITM(t testing.TB, cfg Config, handler http.HandlerFunc) *mitmSetup {
	t.Helper()
	m := &mitmSetup{ca: newTestCA(t), seen: make(chan *http.Request, 16)}
	if handler == nil {
		handler = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			io.WriteString(w, "auth="+r.Header.Get("Authorization"))
		}
	}
	m.origin = &origin{}
	m.origin.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.origin.hits.Add(1)
		select {
		case m.seen <- r.Clone(context.Background()):
		default:
		}
		handler(w, r)
	}))
	m.origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	originCA := newTestCA(t)
	m.origin.TLS = &tls.Config{Certificates: []tls.Certificate{issue(t, originCA, "example.com", "other.test", "rebind.test")}}
	m.origin.StartTLS()
	t.Cleanup(m.origin.Close)
	if cfg.Policy == nil {
		cfg.Policy = mustPolicy(t, []string{"example.com", "other.test"}, nil, "deny")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = loopback("example.com", "other.test")
	}
	if cfg.Dial == nil {
		cfg.Dial = m.dialOrigin
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(originCA.CertPEM)
	cfg.RootCAs = roots
	cfg.CA = &m.ca.TLS
	m.h = newHarness(t, cfg)
	return m
}

// issue returns a server certificate for names signed by c.
func issue(t testing.TB, c *ca.CA, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.TLS.Leaf, &key.PublicKey, c.TLS.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// dialOrigin connects port 443 to the origin; other ports as asked.
func (m *mitmSetup) dialOrigin(ctx context.Context, network, addr string) (net.Conn, error) {
	if strings.HasSuffix(addr, ":443") {
		addr = m.origin.Listener.Addr().String()
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

// client trusts the test CA only: it cannot have reached the origin but through the
// proxy's decryption.
func (m *mitmSetup) client(t testing.TB, h2 bool) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:1"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", m.h.sock)
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: h2,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func do(t *testing.T, c *http.Client, method, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// records reads the audit log (the harness's server must have written it).
func records(t *testing.T, h *harness) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(h.logFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for line := range strings.Lines(string(data)) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// shutdown stops the harness's server so its audit log is complete.
func (h *harness) shutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestMITMRoundTrip: a client trusting only the session CA reaches an HTTPS origin
// the proxy trusts; it sees a leaf certificate for the host signed by that CA, and the
// audit log holds the tunnel and the request inside it, path included.
func TestMITMRoundTrip(t *testing.T) {
	m := newMITM(t, Config{}, hello)
	for _, h2 := range []bool{false, true} {
		resp, body := do(t, m.client(t, h2), "GET", "https://example.com/p/q?tok=x", nil)
		if resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("h2=%v: got %d %q, want 200 hello", h2, resp.StatusCode, body)
		}
		leaf := resp.TLS.PeerCertificates[0]
		if leaf.Issuer.CommonName != "devsandbox proxy CA test" || leaf.VerifyHostname("example.com") != nil {
			t.Errorf("leaf issued by %q for %v", leaf.Issuer.CommonName, leaf.DNSNames)
		}
		if wantProto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]; resp.Proto != wantProto {
			t.Errorf("h2=%v: protocol %s, want %s", h2, resp.Proto, wantProto)
		}
	}
	m.h.shutdown(t)
	var got []string
	for _, r := range records(t, m.h) {
		got = append(got, strings.Join([]string{r.Method, hostPort(r.Host, r.Port) + r.Path, r.Decision, r.Rule, http.StatusText(r.Status), map[bool]string{true: "mitm"}[r.MITM]}, " "))
	}
	slices.Sort(got) // the tunnels end when shutdown closes them, in no set order
	want := []string{
		"CONNECT example.com:443 allow example.com OK mitm",
		"CONNECT example.com:443 allow example.com OK mitm",
		"GET example.com:443/p/q allow example.com OK mitm",
		"GET example.com:443/p/q allow example.com OK mitm",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMITMUntrustedClient: a client that does not trust the CA fails its handshake;
// the tunnel's record says why, and the origin is never asked.
func TestMITMUntrustedClient(t *testing.T) {
	m := newMITM(t, Config{}, hello)
	c := m.h.unixClient(t, nil)
	if _, err := c.Get("https://example.com/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an untrusting client got through: %v", err)
	}
	m.h.shutdown(t)
	recs := records(t, m.h)
	if len(recs) != 1 || !strings.Contains(recs[0].Error, "TLS handshake with the client") {
		t.Errorf("records %+v", recs)
	}
	if n := m.origin.hits.Load(); n != 0 {
		t.Errorf("origin hit %d times", n)
	}
}

// TestCredentialInjected: toward the credential's host the proxy sets the header (over
// the placeholder the client sent there, or anything else); the origin sees the real
// token; the client never does, even when the origin echoes it back in a header and
// the body. (The placeholder in another header is refused: TestPlaceholderOnlyInItsHeader.)
func TestCredentialInjected(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "GITHUB_TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, nil)
	c := m.client(t, false)
	for _, sent := range []map[string]string{
		nil,
		{"Authorization": "Bearer " + testPlaceholder},
		{"Authorization": "token someone-elses"},
	} {
		resp, body := do(t, c, "GET", "https://example.com/user", sent)
		got := <-m.seen
		if a := got.Header.Get("Authorization"); a != "Bearer "+testToken {
			t.Errorf("sent %v: the origin saw Authorization %q", sent, a)
		}
		if strings.Contains(body, testToken) || strings.Contains(resp.Header.Get("X-Echo"), testToken) {
			t.Errorf("the token came back to the client: %q %q", resp.Header.Get("X-Echo"), body)
		}
		if want := "auth=Bearer " + testPlaceholder[:len(testToken)]; len(testPlaceholder) == len(testToken) && body != want {
			t.Errorf("body %q, want %q", body, want)
		}
		if !strings.HasPrefix(body, "auth=Bearer ***") {
			t.Errorf("body %q: the echoed token is not masked", body)
		}
	}
	m.h.shutdown(t)
	for _, r := range records(t, m.h) {
		if r.Method == "GET" && r.Credential != "Authorization" {
			t.Errorf("record %+v does not name the credential", r)
		}
	}
}

// TestPlaceholderRefusedElsewhere: the placeholder toward any other host is refused
// with 403 before anything is sent, in a header, the path or the query, decrypted or
// plain HTTP, and the refusal is logged.
func TestPlaceholderRefusedElsewhere(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "GITHUB_TOKEN"}
	plain := newOrigin(t, false, hello)
	m := newMITM(t, Config{Credentials: []Credential{cred}, Policy: mustPolicy(t, []string{"example.com", "other.test"}, nil, "deny")}, hello)
	c := m.client(t, false)
	want := "devsandbox proxy: GET other.test:443 refused: the request carries the placeholder of GITHUB_TOKEN, which the proxy replaces only toward https://example.com and never sends elsewhere.\n"
	for _, tc := range []struct {
		url string
		hdr map[string]string
	}{
		{"https://other.test/", map[string]string{"Authorization": "Bearer " + testPlaceholder}},
		{"https://other.test/", map[string]string{"X-Anything": "x" + testPlaceholder + "y"}},
		{"https://other.test/" + testPlaceholder, nil},
		{"https://other.test/?key=" + testPlaceholder, nil},
		{"https://other.test/?key=" + url.QueryEscape("a b"+testPlaceholder), nil},
	} {
		resp, body := do(t, c, "GET", tc.url, tc.hdr)
		if resp.StatusCode != http.StatusForbidden || body != want {
			t.Errorf("%s %v: got %d %q", tc.url, tc.hdr, resp.StatusCode, body)
		}
	}
	resp, body := do(t, m.h.unixClient(t, nil), "GET", "http://other.test:"+plain.port()+"/?k="+testPlaceholder, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "placeholder of GITHUB_TOKEN") {
		t.Errorf("plain HTTP: got %d %q", resp.StatusCode, body)
	}
	if n := m.origin.hits.Load() + plain.hits.Load(); n != 0 {
		t.Errorf("origins hit %d times", n)
	}
	m.h.shutdown(t)
	denied := 0
	for _, r := range records(t, m.h) {
		if r.Decision == audit.DecisionDeny && r.Rule == audit.RulePlaceholder && r.Status == 403 {
			denied++
		}
	}
	if denied != 6 {
		t.Errorf("%d placeholder refusals logged, want 6", denied)
	}
}

// TestCredentialPlainHTTP: a credential written http://host:port applies to plain HTTP
// requests, and to plain HTTP inside a CONNECT to that port (a WebSocket client's way).
func TestCredentialPlainHTTP(t *testing.T) {
	var got atomic.Value
	o := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("X-Key"))
		io.WriteString(w, "ok")
	})
	cred := Credential{Host: "http://svc.test:" + o.port(), Header: "X-Key", Value: "k-123456", Name: "SVC_KEY"}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"svc.test"}, nil, "deny"), Resolver: loopback("svc.test"),
		Credentials: []Credential{cred}, CA: &newTestCA(t).TLS})
	if _, body := do(t, h.unixClient(t, nil), "GET", "http://svc.test:"+o.port()+"/", nil); body != "ok" || got.Load() != "k-123456" {
		t.Errorf("plain HTTP: body %q, origin saw %q", body, got.Load())
	}
	got.Store("")
	c := h.dialUnix(t)
	resp, _, br := rawConnect(t, c, "svc.test:"+o.port())
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: svc.test:"+o.port()+"\r\nConnection: close\r\n\r\n")
	inner, err := http.ReadResponse(br, nil)
	if err != nil || inner.StatusCode != 200 || got.Load() != "k-123456" {
		t.Errorf("plain HTTP in a CONNECT: %v %v, origin saw %q", inner, err, got.Load())
	}
}

// rebindLater answers first with a public address, then with loopback: a name that
// rebinds after the CONNECT was allowed. Safe for concurrent use.
type rebindLater struct{ calls atomic.Int64 }

func (f *rebindLater) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if f.calls.Add(1) == 1 {
		return addrs("93.184.216.34"), nil
	}
	return addrs("127.0.0.1"), nil
}

// TestMITMDialTimeCheck: the decrypted requests' upstream connection goes through the
// checked dialer, so a name that rebinds to loopback after the CONNECT was allowed is
// refused when the proxy dials it.
func TestMITMDialTimeCheck(t *testing.T) {
	m := newMITM(t, Config{Policy: mustPolicy(t, nil, nil, "allow"), Resolver: &rebindLater{}}, hello)
	resp, body := do(t, m.client(t, false), "GET", "https://rebind.test/", nil)
	want := `devsandbox proxy: GET rebind.test:443 refused by rule "private address": rebind.test resolves to 127.0.0.1, a loopback address.` + "\n" +
		"To allow it, run devsandbox with --allow rebind.test:443 (or add it to egress.allow).\n"
	if resp.StatusCode != http.StatusForbidden || body != want {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	if n := m.origin.hits.Load(); n != 0 {
		t.Errorf("origin hit %d times", n)
	}
}

// TestReadOnlyRule: a read-only host gets GET and HEAD, not POST, whether decrypted or
// plain; without MITM a tunnel to it is refused, since the rule could not be checked.
func TestReadOnlyRule(t *testing.T) {
	pol, err := mustPolicy(t, []string{"example.com", "other.test"}, nil, "deny").WithRequestRules(ReadOnly("example.com"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMITM(t, Config{Policy: pol}, hello)
	c := m.client(t, false)
	for method, code := range map[string]int{"GET": 200, "HEAD": 200, "POST": 403, "DELETE": 403} {
		if resp, _ := do(t, c, method, "https://example.com/repos/x", nil); resp.StatusCode != code {
			t.Errorf("%s: %d, want %d", method, resp.StatusCode, code)
		}
	}
	if resp, _ := do(t, c, "POST", "https://other.test/", nil); resp.StatusCode != 200 {
		t.Errorf("POST to a host without rule: %d", resp.StatusCode)
	}

	plain := newOrigin(t, false, hello)
	h := newHarness(t, Config{Policy: pol, Resolver: loopback("example.com")})
	resp, body := do(t, h.unixClient(t, nil), "POST", "http://example.com:"+plain.port()+"/x", nil)
	if want := `devsandbox proxy: POST example.com:` + plain.port() + `/x refused by rule "example.com methods GET,HEAD,OPTIONS": only GET, HEAD, OPTIONS may be sent to example.com.` + "\n"; resp.StatusCode != 403 || body != want {
		t.Errorf("plain POST: %d %q\nwant %q", resp.StatusCode, body, want)
	}
	cresp, cbody, _ := rawConnect(t, h.dialUnix(t), "example.com:443")
	if cresp.StatusCode != 403 || !strings.Contains(cbody, "a request rule limits what may be sent there") {
		t.Errorf("CONNECT without MITM: %d %q", cresp.StatusCode, cbody)
	}
}

// TestMITMMisdirected: inside a tunnel to one host, a request for another is refused.
func TestMITMMisdirected(t *testing.T) {
	m := newMITM(t, Config{}, hello)
	c := m.h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "example.com:443"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com"})
	io.WriteString(tc, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("%v %v", resp, err)
	}
	if n := m.origin.hits.Load(); n != 0 {
		t.Errorf("origin hit %d times", n)
	}
}

// TestMITMOtherPortsTunnel: with MITM on, a CONNECT to a port no credential names (ssh
// on 22, say) stays a plain tunnel.
func TestMITMOtherPortsTunnel(t *testing.T) {
	target := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"echo.test"}, nil, "deny"), Resolver: loopback("echo.test"), CA: &newTestCA(t).TLS})
	c := h.dialUnix(t)
	resp, _, br := rawConnect(t, c, "echo.test:"+target.port())
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	io.WriteString(c, "SSH-2.0-test\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "SSH-2.0-test\r\n" {
		t.Errorf("echo %q, %v", line, err)
	}
}

// TestMITMShutdown: an idle decrypted keep-alive connection does not hold Shutdown.
func TestMITMShutdown(t *testing.T) {
	m := newMITM(t, Config{}, hello)
	if resp, _ := do(t, m.client(t, false), "GET", "https://example.com/", nil); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := m.h.srv.Shutdown(ctx); err != nil || time.Since(start) > time.Second {
		t.Errorf("shutdown: %v after %v", err, time.Since(start))
	}
}

// TestLeafCache: one certificate per host, generated once however many ask at once;
// the least recently used host goes first.
func TestLeafCache(t *testing.T) {
	c := newLeafCache(2)
	var gens atomic.Int64
	gen := func() (*tls.Certificate, error) { gens.Add(1); return &tls.Certificate{}, nil }
	var wg sync.WaitGroup
	certs := make([]*tls.Certificate, 8)
	for i := range certs {
		wg.Go(func() { certs[i], _ = c.Fetch("a", gen) })
	}
	wg.Wait()
	for _, x := range certs {
		if x != certs[0] {
			t.Fatal("different certificates for one host")
		}
	}
	c.Fetch("b", gen)
	c.Fetch("a", gen) // a is now the most recent
	c.Fetch("c", gen) // evicts b
	c.Fetch("a", gen)
	if gens.Load() != 3 || c.len() != 2 {
		t.Errorf("%d generations, %d cached; want 3, 2", gens.Load(), c.len())
	}
}

// TestMITMNoLeak opens 600 decrypted tunnels at once — silent after CONNECT, half a
// ClientHello, a finished handshake with a request kept alive — drops them all, and
// checks goroutines and fds come back to where they were.
func TestMITMNoLeak(t *testing.T) {
	m := newMITM(t, Config{}, hello)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	connect := func(c net.Conn) (*bufio.Reader, error) {
		io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("CONNECT: %s", resp.Status)
		}
		return br, err
	}
	behaviours := []func(c net.Conn) error{
		func(c net.Conn) error { _, err := connect(c); return err }, // silent
		func(c net.Conn) error { // half a ClientHello
			if _, err := connect(c); err != nil {
				return err
			}
			_, err := c.Write([]byte{0x16, 0x03, 0x01, 0x02})
			return err
		},
		func(c net.Conn) error { // a request on a kept-alive decrypted connection
			if _, err := connect(c); err != nil {
				return err
			}
			tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com"})
			io.WriteString(tc, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
			}
			return err
		},
	}
	run := func(n int) {
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		next := make(chan int)
		for range 32 {
			wg.Go(func() {
				for i := range next {
					c, err := net.Dial("unix", m.h.sock)
					if err != nil {
						t.Error(err)
						continue
					}
					c.SetDeadline(time.Now().Add(30 * time.Second))
					conns[i] = c
					if err := behaviours[i%len(behaviours)](c); err != nil {
						t.Errorf("conn %d: %v", i, err)
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		t.Logf("%d connections open: %d goroutines, %d fds", n, runtime.NumGoroutine(), fdCount(t))
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	settled := func(g, f int) bool {
		return eventually(t, 20*time.Second, func() bool {
			m.h.srv.tr.CloseIdleConnections()
			return runtime.NumGoroutine() <= g && fdCount(t) <= f && m.h.srv.track.running() == 0
		})
	}
	run(len(behaviours))
	if !settled(1<<30, 1<<30) {
		t.Fatal("warm-up did not finish")
	}
	g0, f0 := runtime.NumGoroutine(), fdCount(t)
	run(600)
	if !settled(g0+5, f0+5) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines %d (before %d), fds %d (before %d)\n%s",
			runtime.NumGoroutine(), g0, fdCount(t), f0, buf[:runtime.Stack(buf, true)])
	}
}

// TestMITMUpgrade: a protocol upgrade (WebSocket) inside a decrypted tunnel reaches
// the origin, and bytes flow both ways after the 101.
func TestMITMUpgrade(t *testing.T) {
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", 400)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		buf := make([]byte, 4)
		if _, err := io.ReadFull(brw, buf); err == nil {
			c.Write(buf)
		}
	})
	c := m.h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "example.com:443"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
	io.WriteString(tc, "GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	io.WriteString(tc, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Errorf("echo %q, %v", buf, err)
	}
}
