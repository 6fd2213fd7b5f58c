package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// tlsHandshakeRecord is the first byte of a TLS ClientHello.
const tlsHandshakeRecord = 0x16

// intercepts reports whether a CONNECT to host:port is decrypted: with a CA, every
// CONNECT to port 443, to a credential's host and port, and to a port a request rule
// names explicitly (its entry has that port). Other tunnels (ssh on 22, databases)
// pass untouched.
func (s *Server) intercepts(host string, port int) bool {
	if s.leafTLS == nil {
		return false
	}
	if port == 443 {
		return true
	}
	for i := range s.creds {
		if s.creds[i].host.targets(host, port) {
			return true
		}
	}
	for i := range s.cfg.Policy.rules {
		if e := &s.cfg.Policy.rules[i].host; e.port != 0 && e.targets(host, port) {
			return true
		}
	}
	return false
}

// expectsTLS reports whether a decrypted CONNECT to host:port must carry TLS: port 443,
// and a port an https credential goes to. Plain HTTP inside one is refused, so the
// sandbox cannot make a request the credential's host expects encrypted cross the
// network in clear.
func (s *Server) expectsTLS(host string, port int) bool {
	if port == 443 {
		return true
	}
	for i := range s.creds {
		if c := &s.creds[i]; c.scheme == "https" && c.host.targets(host, port) {
			return true
		}
	}
	return false
}

// intercept is the Hijack of a decrypted CONNECT, whose target passed the policy. It
// answers 200, then reads the client's first byte: a TLS ClientHello is answered with
// a leaf certificate for the target signed by this server's CA (goproxy's
// TLSConfigFromCA, cached per host); anything else is taken as plain HTTP, and refused
// with 400 where the target expects TLS (expectsTLS). Requests on
// the connection are then served one by one (HTTP/1.1, or HTTP/2 when the client
// offers it) by serveInner, each forwarded to the target through the checked
// transport. It runs inside the handler, so Shutdown waits for it.
func (s *Server) intercept(req *http.Request, client net.Conn, gctx *goproxy.ProxyCtx) {
	defer client.Close()
	ex := exchangeFrom(req.Context())
	_ = client.SetWriteDeadline(time.Now().Add(s.cfg.TunnelIdleTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ex.fail(err)
		return
	}
	ex.setStatus(http.StatusOK)
	counted := &countedConn{Conn: client, up: &ex.up, down: &ex.down}
	_ = client.SetReadDeadline(time.Now().Add(s.cfg.ReadHeaderTimeout))
	br := bufio.NewReader(counted)
	first, err := br.Peek(1)
	if err != nil {
		ex.fail(fmt.Errorf("waiting for the client's first byte: %w", err))
		return
	}
	early, _ := br.Peek(br.Buffered())
	var conn net.Conn = &bufferedConn{Conn: counted, early: bytes.Clone(early)}
	scheme := "http"
	if first[0] == tlsHandshakeRecord {
		raw := &recordBatcher{Conn: cutConn{conn}}
		tc, err := s.handshake(req.Context(), raw, hostPort(ex.target.Host, ex.target.Port), gctx)
		if err != nil {
			ex.fail(err)
			return
		}
		conn, scheme = tc, "https"
		if cs := tc.ConnectionState(); cs.NegotiatedProtocol == "h2" {
			if !h2Suite(cs) {
				// net/http's HTTP/2 server refuses these (INADEQUATE_SECURITY); it does
				// not see the TLS of an h2Conn, so the check is made here.
				ex.fail(fmt.Errorf("the client negotiated HTTP/2 over %s, a cipher suite HTTP/2 prohibits (RFC 9113, 9.2.2)", tls.CipherSuiteName(cs.CipherSuite)))
				return
			}
			conn = &h2Conn{Conn: tc, raw: raw}
		}
	} else if s.expectsTLS(ex.target.Host, ex.target.Port) {
		s.refuseCleartext(conn, ex)
		return
	}
	_ = client.SetDeadline(time.Time{})
	s.serveInner(conn, ex.target, scheme)
}

// refuseCleartext answers the plain HTTP request on a decrypted CONNECT that expects
// TLS with 400, and records why; nothing is forwarded.
func (s *Server) refuseCleartext(conn net.Conn, ex *exchange) {
	target := hostPort(ex.target.Host, ex.target.Port)
	reason := "plain HTTP inside a CONNECT to " + target + ", which carries TLS"
	ex.deny(audit.RuleCleartext, reason)
	ex.setStatus(http.StatusBadRequest)
	if req, err := http.ReadRequest(bufio.NewReaderSize(conn, 4096)); err == nil && req.Body != nil {
		req.Body.Close() // read the head, so closing does not reset the connection before the answer
	}
	body := "devsandbox proxy: " + reason + ": the proxy forwards only TLS there (use https://" + target + "/).\n"
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.ReadHeaderTimeout))
	resp := textResponse(nil, http.StatusBadRequest, body)
	resp.Close = true
	_ = resp.Write(conn)
}

// handshake is the server side of the client's TLS handshake, with a leaf
// certificate for host signed by the CA, bounded by ReadHeaderTimeout.
func (s *Server) handshake(ctx context.Context, conn net.Conn, host string, gctx *goproxy.ProxyCtx) (*tls.Conn, error) {
	conf, err := s.leafTLS(host, gctx)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %s: %w", host, err)
	}
	conf.MinVersion = tls.VersionTLS12
	conf.NextProtos = []string{"h2", "http/1.1"}
	tc := tls.Server(conn, conf)
	hctx, cancel := context.WithTimeout(ctx, s.cfg.ReadHeaderTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		// Most often the client does not trust the CA: it ignores the CA bundle's
		// variables, or pins certificates.
		return nil, fmt.Errorf("TLS handshake with the client: %w", err)
	}
	return tc, nil
}

// serveInner serves the requests of one decrypted connection until it closes, goes
// idle past IdleTimeout, or the Server shuts down; then it waits for their handlers.
// An *h2Conn is served HTTP/2 alone (its client chose it in the handshake), anything
// else as net/http does: HTTP/1.1, or HTTP/2 on a *tls.Conn that negotiated it.
func (s *Server) serveInner(conn net.Conn, t Target, scheme string) {
	ln := newOneConnListener(conn)
	var handlers tracker
	var batch *recordBatcher // an HTTP/1.1 client's socket under the proxy's TLS
	if tc, ok := conn.(*tls.Conn); ok {
		batch, _ = tc.NetConn().(*recordBatcher)
	}
	srv := &http.Server{
		Handler:           s.innerHandler(t, scheme, batch, &handlers),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		// HTTP/2 writes frames from a goroutine of its own, under no deadline the
		// handlers set (theirs are per stream): without this, a client that stops
		// reading held the connection until IdleTimeout and the GOAWAY grace. A write
		// that moves no byte for the idle time times out, and cutConn closes.
		HTTP2:    &http.HTTP2Config{WriteByteTimeout: s.cfg.TunnelIdleTimeout},
		ErrorLog: s.cfg.ErrorLog,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				ln.Close() // Serve returns once the one connection is done
			}
		},
	}
	if _, ok := conn.(*h2Conn); ok {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	if !s.addInner(srv) {
		return // shutting down
	}
	defer s.removeInner(srv)
	_ = srv.Serve(ln)
	_ = handlers.wait(context.Background()) // a hijacked (upgraded) request outlives Serve
}

// addInner registers an inner server so Shutdown stops it too; false once Shutdown
// has begun.
func (s *Server) addInner(srv *http.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.inner == nil {
		s.inner = map[*http.Server]struct{}{}
	}
	s.inner[srv] = struct{}{}
	return true
}

func (s *Server) removeInner(srv *http.Server) {
	s.mu.Lock()
	delete(s.inner, srv)
	s.mu.Unlock()
}

// sameHost reports whether a decrypted request's Host (or :authority) names the
// CONNECT target: the connection goes there and nowhere else, so a request meant for
// another host (domain fronting) is refused rather than delivered to the wrong one.
func sameHost(hostHeader string, t Target) bool {
	if hostHeader == "" {
		return true // HTTP/1.0: the target is the host
	}
	h, p, err := net.SplitHostPort(hostHeader)
	if err != nil {
		h, p = hostHeader, ""
	}
	return normalizeHost(h) == t.Host && (p == "" || p == strconv.Itoa(t.Port))
}

// cutConn is a client connection under the proxy's TLS. A write to it that times out
// closes it: the client took nothing for the idle time, so the connection is over, and
// closing it at once ends the TLS close's wait too. crypto/tls's Close gives its
// close_notify alert a deadline of its own, 5 s, replacing the one that expired; to a
// client that does not read, that held the handler 5 s past the idle timeout.
type cutConn struct{ net.Conn }

func (c cutConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && isTimeout(err) {
		c.Conn.Close()
	}
	return n, err
}

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	conn   net.Conn
	taken  atomic.Bool
	done   chan struct{}
	closed sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{conn: c, done: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.taken.Swap(true) {
		return l.conn, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// countedConn counts the bytes a decrypted tunnel moves, as a plain tunnel does:
// client to target in up, target to client in down.
type countedConn struct {
	net.Conn
	up, down *atomic.Int64
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.up.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.down.Add(int64(n))
	return n, err
}
