package proxy

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/devsandbox/devsandbox/egress"
	looptune "github.com/devsandbox/devsandbox/internal/loopback"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

// Server defaults, used when the Config field is zero.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 90 * time.Second // a keep-alive client connection between requests
	DefaultTunnelIdleTimeout = 10 * time.Minute // a tunnel with no byte either way
	DefaultMaxHeaderBytes    = 64 << 10
)

// proxyUser is the user name of the TCP endpoint's Basic credential.
const proxyUser = "devsandbox"

// Config configures a Server. Policy is required; the rest have defaults.
type Config struct {
	Policy  *Policy
	Session string // recorded in every audit record, and names the session's log file
	LogDir  string // audit log directory (see audit.Open); "" keeps no log unless LogTo is set
	// LogTo, when LogDir is "", receives the audit log as a stream (audit.NewStream):
	// where the proxy runs away from the host, the host relays it into its log.
	LogTo io.Writer
	Log   audit.Options // the audit log's budget and retention; Now defaults to Config.Now

	Resolver Resolver                                                          // nil: net.DefaultResolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error) // nil: net.Dialer

	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	TunnelIdleTimeout time.Duration
	MaxHeaderBytes    int

	ErrorLog *log.Logger      // proxy errors (never secrets); nil discards them
	Now      func() time.Time // nil: time.Now

	// CA, when set, turns on MITM: CONNECTs to port 443, and to ports a credential or a
	// request rule names, are decrypted with leaf certificates it signs (the sandbox
	// must trust it), so credentials, request rules and the audit log apply to the
	// requests inside. Nil: every CONNECT is a tunnel the proxy does not read.
	CA *tls.Certificate
	// LeafCacheSize bounds the leaf certificates kept, by host; 0: DefaultLeafCacheSize.
	LeafCacheSize int
	// RootCAs verifies upstream servers the proxy speaks TLS to itself (decrypted
	// tunnels, https:// requests); nil: the system's roots (SSL_CERT_FILE and
	// SSL_CERT_DIR apply).
	RootCAs *x509.CertPool
	// Credentials are added to matching requests the proxy sees (see Credential).
	Credentials []Credential
	// MaxPushHead bounds the command list of a git push the proxy reads to judge it
	// (Policy.WithGitPush); a longer one is refused. 0: DefaultMaxPushHead.
	MaxPushHead int
}

// Server is one session's filtering proxy. Its lifecycle: New, then ListenUnix, Serve
// and/or ListenTCP (each serves in the background), then Shutdown once.
type Server struct {
	cfg    Config
	dialer *Dialer
	gp     *goproxy.ProxyHttpServer
	tr     *http.Transport
	up     *upstream     // plain requests without a body (sendsDirect)
	log    *audit.Writer // nil when cfg.LogDir is ""
	cred   []byte        // "user:secret" expected in Proxy-Authorization on TCP
	secret string
	track  tracker
	// spliced counts response body bytes relayed socket to socket (relayBody): which
	// path a body took is otherwise invisible.
	spliced atomic.Int64

	creds   []credential
	leafTLS func(host string, ctx *goproxy.ProxyCtx) (*tls.Config, error) // nil: no MITM
	rp      *httputil.ReverseProxy                                        // decrypted requests

	mu      sync.Mutex
	servers []*http.Server
	inner   map[*http.Server]struct{} // one per decrypted connection
	closing bool
	unix    []string // socket paths to remove on Shutdown
	tcpAddr string
}

// New builds a Server; it listens on nothing until ListenUnix or ListenTCP.
func New(cfg Config) (*Server, error) {
	if cfg.Policy == nil {
		return nil, errors.New("proxy: Config.Policy is nil")
	}
	cfg = withDefaults(cfg)
	secret := make([]byte, 32)
	var err error
	if _, err = rand.Read(secret); err != nil {
		return nil, fmt.Errorf("proxy: generating the session secret: %w", err)
	}
	s := &Server{cfg: cfg, secret: base64.RawURLEncoding.EncodeToString(secret)}
	s.cred = []byte(proxyUser + ":" + s.secret)
	s.dialer = &Dialer{Policy: cfg.Policy, Resolver: cfg.Resolver, Dial: cfg.Dial}
	if s.creds, err = compileCredentials(cfg.Credentials); err != nil {
		return nil, err
	}
	s.tr = s.newTransport()
	s.up = &upstream{dial: s.dialContext, idle: cfg.IdleTimeout}
	s.gp = s.newGoproxy()
	if cfg.CA != nil {
		// This server's own CA and leaf cache; goproxy's GoproxyCa and MitmConnect
		// globals are never read or assigned.
		s.leafTLS = goproxy.TLSConfigFromCA(cfg.CA)
		s.gp.CertStore = newLeafCache(cfg.LeafCacheSize)
	}
	s.rp = s.newReverseProxy()
	if cfg.LogDir != "" {
		l, err := audit.Open(cfg.LogDir, cfg.Session, cfg.Log)
		if err != nil {
			return nil, err
		}
		s.log = l
	} else if cfg.LogTo != nil {
		s.log = audit.NewStream(cfg.LogTo, cfg.Session, cfg.Log)
	}
	return s, nil
}

func withDefaults(c Config) Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.TunnelIdleTimeout, DefaultTunnelIdleTimeout)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.ErrorLog == nil {
		c.ErrorLog = log.New(io.Discard, "", 0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log.Now == nil {
		c.Log.Now = c.Now
	}
	if c.LeafCacheSize == 0 {
		c.LeafCacheSize = DefaultLeafCacheSize
	}
	if c.MaxPushHead == 0 {
		c.MaxPushHead = DefaultMaxPushHead
	}
	return c
}

// serve serves ln in the background; requireAuth demands the session credential.
func (s *Server) serve(ln net.Listener, requireAuth bool) {
	srv := &http.Server{
		Handler:           s.handler(requireAuth),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          s.cfg.ErrorLog,
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return
	}
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	if tl, ok := ln.(*net.TCPListener); ok {
		ln = tcpListener{tl}
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.ErrorLog.Printf("proxy: serving %s: %v", ln.Addr(), err)
		}
	}()
}

// tcpListener is a TCP listener whose connections from this machine (the sandbox's
// 127.0.0.1:3128, the proxy's own 127.0.0.1 listener) get package loopback's
// congestion control before the server reads them; a connection from anywhere else
// keeps the system's choice. Measured on a 256 MiB tunnel download: the proxy's time
// in splice to the client fell by about a third and its CPU from about 105 to 75 ms.
// See docs/performance.md "Egress proxy throughput".
type tcpListener struct{ *net.TCPListener }

func (l tcpListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	looptune.Tune(c)
	return c, nil
}

// ListenTCP listens on addr ("" means 127.0.0.1:0) and serves requests that carry the
// session credential (see URL); others get 407. It returns the address it listens on.
func (s *Server) ListenTCP(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("proxy: listening on %s: %w", addr, err)
	}
	s.mu.Lock()
	s.tcpAddr = ln.Addr().String()
	s.mu.Unlock()
	s.serve(ln, true)
	return ln.Addr().String(), nil
}

// URL is the proxy URL of the TCP endpoint, credential included, or "" before
// ListenTCP. It is a secret: it belongs in the sandbox's environment only.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tcpAddr == "" {
		return ""
	}
	u := url.URL{Scheme: "http", User: url.UserPassword(proxyUser, s.secret), Host: s.tcpAddr}
	return u.String()
}

// Env is egress.ProxyEnv(URL()): the sandbox's proxy environment for the TCP endpoint,
// or nil before ListenTCP. A sandbox that reaches the Unix socket through a forwarder
// uses egress.ProxyEnv with the forwarder's URL instead.
func (s *Server) Env() map[string]string {
	u := s.URL()
	if u == "" {
		return nil
	}
	return egress.ProxyEnv(u)
}
