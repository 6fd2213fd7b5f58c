package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
)

// newGoproxy builds this server's own goproxy instance: its transport and CONNECT dial
// are the checked ones (never goproxy's environment-derived defaults), plain requests
// go through s.roundTrip, and CONNECT is decided by s.handleConnect.
func (s *Server) newGoproxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = s.cfg.ErrorLog
	gp.Verbose = false
	gp.Tr = s.tr
	gp.ConnectDial = func(network, addr string) (net.Conn, error) {
		return s.dialContext(context.Background(), network, addr)
	}
	gp.ConnectDialWithReq = nil
	gp.KeepAcceptEncoding = true // pass the client's encoding through untouched
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "devsandbox proxy: not a proxy request", http.StatusBadRequest)
	})
	gp.OnRequest().DoFunc(func(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		ctx.RoundTripper = goproxy.RoundTripperFunc(s.roundTrip)
		return r, nil
	})
	gp.OnRequest().HandleConnectFunc(s.handleConnect)
	return gp
}

// newTransport is the upstream transport for plain HTTP requests: checked dialing, no
// upstream proxy from the host's environment, verified TLS for https:// URLs.
func (s *Server) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            s.dialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.cfg.RootCAs},
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        s.cfg.IdleTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		DisableCompression:     true,
	}
}

// checkedConn is an upstream connection and the decision that allowed it. Each write
// to it gets the idle time to complete, as each write to a client does: an origin that
// stops reading an upload does not hold the handler (the server notices a client that
// left only once it has read the request body, so nothing else would end it). A write
// that times out closes the connection, so a TLS close does not wait 5 s more to send
// its close_notify (see cutConn). A deadline a caller sets (the direct upstream's
// cancel, the TLS close's) is kept when it is the earlier.
type checkedConn struct {
	net.Conn
	decision Decision
	idle     time.Duration

	mu  sync.Mutex
	set time.Time // the write deadline a caller set; zero: none
	own time.Time // the write deadline last in effect

	ra readAhead // the read side while a decrypted response is relayed (gather.go)
}

func (c *checkedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	// As responseWriter.refresh: moved only when less than idle is left.
	if now := time.Now(); c.own.Sub(now) < c.idle {
		d := now.Add(c.idle + c.idle/8)
		if !c.set.IsZero() && c.set.Before(d) {
			d = c.set
		}
		if !d.Equal(c.own) {
			c.own = d
			_ = c.Conn.SetWriteDeadline(d)
		}
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	if err != nil && isTimeout(err) {
		c.Conn.Close()
	}
	return n, err
}

func (c *checkedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set, c.own = t, t
	return c.Conn.SetWriteDeadline(t)
}

func (c *checkedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set, c.own = t, t
	return c.Conn.SetDeadline(t)
}

// dialContext is the checked dial; it tells the exchange in ctx (if any) the decision.
func (s *Server) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, err
	}
	t, err := s.dialer.Check(ctx, host, port)
	if ex := exchangeFrom(ctx); ex != nil {
		ex.decide(t.Decision, err)
	}
	if err != nil {
		return nil, err
	}
	c, err := s.dialer.DialTarget(ctx, t)
	if err != nil {
		return nil, err
	}
	return &checkedConn{Conn: c, decision: t.Decision, idle: s.cfg.TunnelIdleTimeout}, nil
}
