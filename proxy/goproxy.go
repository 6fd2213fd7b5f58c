package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
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

// checkedConn is an upstream connection and the decision that allowed it.
type checkedConn struct {
	net.Conn
	decision Decision
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
	return &checkedConn{Conn: c, decision: t.Decision}, nil
}
