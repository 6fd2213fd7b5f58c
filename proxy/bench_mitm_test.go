package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/devsandbox/devsandbox/proxy/ca"
)

// mitmBenchSize is the download of the MITM throughput benchmarks (issue target:
// decrypted ≥ 0.5× direct).
const mitmBenchSize = 256 << 20

// anyLoopback resolves every name to 127.0.0.1.
type anyLoopback struct{}

func (anyLoopback) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return addrs("127.0.0.1"), nil
}

// benchTLS is an HTTPS origin for *.bench.test (and bench.test) serving body, and the
// CA that issued its certificate.
func benchTLS(b *testing.B, h http.HandlerFunc) (*httptest.Server, *ca.CA) {
	originCA := newTestCA(b)
	o := httptest.NewUnstartedServer(h)
	o.TLS = &tls.Config{Certificates: []tls.Certificate{issue(b, originCA, "bench.test", "*.bench.test")}}
	o.StartTLS()
	b.Cleanup(o.Close)
	return o, originCA
}

func pool(pems ...[]byte) *x509.CertPool {
	p := x509.NewCertPool()
	for _, pem := range pems {
		p.AppendCertsFromPEM(pem)
	}
	return p
}

// benchProxy serves a Server with (mitm) or without a CA that reaches the origin for
// every name and port 443; it returns a client transport through it that trusts
// roots.
func benchProxy(b *testing.B, o *httptest.Server, originCA *ca.CA, mitm bool, roots *x509.CertPool, keepAlive bool) *http.Transport {
	tr, _ := benchProxyServer(b, o, originCA, mitm, roots, keepAlive)
	return tr
}

// benchProxyServer is benchProxy; it also returns the Server.
func benchProxyServer(b *testing.B, o *httptest.Server, originCA *ca.CA, mitm bool, roots *x509.CertPool, keepAlive bool) (*http.Transport, *Server) {
	pol := mustPolicy(b, []string{"127.0.0.0/8"}, nil, "allow")
	cfg := Config{Policy: pol, Resolver: anyLoopback{}, RootCAs: pool(originCA.CertPEM),
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, o.Listener.Addr().String())
		}}
	if mitm {
		cfg.CA = &newTestCA(b).TLS
		roots = pool(cfgCAPEM(cfg.CA))
	}
	h := newHarness(b, cfg)
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:1"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", h.sock)
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		DisableKeepAlives: !keepAlive,
	}
	b.Cleanup(tr.CloseIdleConnections)
	return tr, h.srv
}

// overTCP makes tr reach the proxy at its TCP endpoint with the session credential,
// as a sandbox under bwrap does, instead of its Unix socket (the one docker's and
// krun's in-container relays reach).
func overTCP(b *testing.B, tr *http.Transport, srv *Server) {
	pu, err := url.Parse(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	tr.Proxy = http.ProxyURL(pu)
	tr.DialContext = nil
}

// cfgCAPEM is the PEM of a CA certificate.
func cfgCAPEM(c *tls.Certificate) []byte {
	return pemCert(c.Certificate[0])
}

func benchGet(b *testing.B, c *http.Client, u string, size int64) {
	benchGetProto(b, c, u, size)
}

// benchGetProto is benchGet; it returns the protocol of the response.
func benchGetProto(b *testing.B, c *http.Client, u string, size int64) string {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != size {
		b.Fatalf("status %d, %d bytes, want 200, %d", resp.StatusCode, n, size)
	}
	return resp.Proto
}

// BenchmarkDownloadTLSDirect: 256 MiB over HTTPS straight from the origin.
func BenchmarkDownloadTLSDirect(b *testing.B) {
	o, originCA := benchTLS(b, blob(mitmBenchSize))
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, o.Listener.Addr().String())
		},
		TLSClientConfig: &tls.Config{RootCAs: pool(originCA.CertPEM)},
	}
	b.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	b.SetBytes(mitmBenchSize)
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", mitmBenchSize)
	}
}

// BenchmarkDownloadTLSTunnel: the same through the proxy, tunnelled (no CA).
func BenchmarkDownloadTLSTunnel(b *testing.B) {
	o, originCA := benchTLS(b, blob(mitmBenchSize))
	c := &http.Client{Transport: benchProxy(b, o, originCA, false, pool(originCA.CertPEM), true)}
	b.SetBytes(mitmBenchSize)
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", mitmBenchSize)
	}
}

// BenchmarkDownloadMITM: the same through the proxy, decrypted and re-encrypted.
func BenchmarkDownloadMITM(b *testing.B) {
	o, originCA := benchTLS(b, blob(mitmBenchSize))
	c := &http.Client{Transport: benchProxy(b, o, originCA, true, nil, true)}
	b.SetBytes(mitmBenchSize)
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", mitmBenchSize)
	}
}

// BenchmarkDownloadMITMTCP is BenchmarkDownloadMITM with the client on the proxy's TCP
// endpoint (see overTCP).
func BenchmarkDownloadMITMTCP(b *testing.B) {
	o, originCA := benchTLS(b, blob(mitmBenchSize))
	tr, srv := benchProxyServer(b, o, originCA, true, nil, true)
	overTCP(b, tr, srv)
	c := &http.Client{Transport: tr}
	b.SetBytes(mitmBenchSize)
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", mitmBenchSize)
	}
}

// BenchmarkDownloadMITMH2 is BenchmarkDownloadMITM with a client that speaks HTTP/2 to
// the proxy, as curl and git do for https:// URLs (they offer h2 first); the proxy's
// leg to the origin is HTTP/1.1 either way.
func BenchmarkDownloadMITMH2(b *testing.B) {
	o, originCA := benchTLS(b, blob(mitmBenchSize))
	tr := benchProxy(b, o, originCA, true, nil, true)
	tr.ForceAttemptHTTP2 = true
	c := &http.Client{Transport: tr}
	b.SetBytes(mitmBenchSize)
	for b.Loop() {
		resp := benchGetProto(b, c, "https://bench.test/", mitmBenchSize)
		if resp != "HTTP/2.0" {
			b.Fatalf("the client spoke %s to the proxy, want HTTP/2.0", resp)
		}
	}
}

// The handshake benchmarks each make one small HTTPS request on a new connection.

// BenchmarkHandshakeDirect: TLS straight to the origin.
func BenchmarkHandshakeDirect(b *testing.B) {
	o, originCA := benchTLS(b, hello)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, o.Listener.Addr().String())
		},
		TLSClientConfig:   &tls.Config{RootCAs: pool(originCA.CertPEM)},
		DisableKeepAlives: true,
	}
	c := &http.Client{Transport: tr}
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", 5)
	}
}

// BenchmarkHandshakeTunnel: CONNECT, then TLS to the origin through the tunnel.
func BenchmarkHandshakeTunnel(b *testing.B) {
	o, originCA := benchTLS(b, hello)
	c := &http.Client{Transport: benchProxy(b, o, originCA, false, pool(originCA.CertPEM), false)}
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", 5)
	}
}

// BenchmarkHandshakeMITMCachedHost: CONNECT and TLS to the proxy with a cached leaf;
// the proxy's upstream connection is pooled.
func BenchmarkHandshakeMITMCachedHost(b *testing.B) {
	o, originCA := benchTLS(b, hello)
	c := &http.Client{Transport: benchProxy(b, o, originCA, true, nil, false)}
	for b.Loop() {
		benchGet(b, c, "https://bench.test/", 5)
	}
}

// BenchmarkHandshakeMITMNewHost: a host never seen before each time: a leaf is
// signed, and the proxy opens a new upstream TLS connection.
func BenchmarkHandshakeMITMNewHost(b *testing.B) {
	o, originCA := benchTLS(b, hello)
	c := &http.Client{Transport: benchProxy(b, o, originCA, true, nil, false)}
	i := 0
	for b.Loop() {
		i++
		benchGet(b, c, fmt.Sprintf("https://h%d-%d.bench.test/", time.Now().UnixNano(), i), 5)
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// BenchmarkLeafSign: what a host never seen costs the proxy's CPU alone: a key and a
// certificate signed by the CA (goproxy's TLSConfigFromCA, without the cache).
func BenchmarkLeafSign(b *testing.B) {
	sign := goproxy.TLSConfigFromCA(&newTestCA(b).TLS)
	ctx := &goproxy.ProxyCtx{Proxy: goproxy.NewProxyHttpServer()}
	i := 0
	for b.Loop() {
		i++
		if _, err := sign(fmt.Sprintf("h%d.bench.test:443", i), ctx); err != nil {
			b.Fatal(err)
		}
	}
}
