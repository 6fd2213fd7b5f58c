package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// handleConnect decides a CONNECT before any byte goes to the target: it refuses port
// 22 under a push policy that does not allow ssh (before any lookup), resolves and
// checks the destination, then rejects it (403 naming the rule, 502 when it does not
// resolve), decrypts it (intercept, when MITM is on for the port), or tunnels to the
// checked addresses. A tunnel to a host a request rule limits is refused: the rule
// could not be checked inside it.
func (s *Server) handleConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	ex := exchangeFrom(ctx.Req.Context())
	h, port, _ := splitHostPort(host) // checked by badRequest
	if s.cfg.Policy.refusesSSH(port) {
		reason := "git over ssh cannot be checked against proxy.git_push; push over HTTPS (https://HOST/OWNER/REPO.git), or set proxy.git_ssh = true to allow ssh unchecked"
		ex.deny(audit.RuleGitSSH, reason)
		body := fmt.Sprintf("devsandbox proxy: CONNECT %s refused: %s.\n", hostPort(normalizeHost(h), port), reason)
		return s.reject(ctx, ex, http.StatusForbidden, body), host
	}
	t, err := s.dialer.Check(ctx.Req.Context(), h, port)
	ex.decide(t.Decision, err)
	var denied *DeniedError
	switch {
	case errors.As(err, &denied):
		body := denyBody(http.MethodConnect, denied.Host, port, denied.Decision)
		return s.reject(ctx, ex, http.StatusForbidden, body), host
	case err != nil:
		return s.reject(ctx, ex, http.StatusBadGateway, "devsandbox proxy: "+err.Error()+"\n"), host
	}
	ex.target = t
	if s.intercepts(t.Host, port) {
		ex.mitm = true
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.intercept}, host
	}
	if s.cfg.Policy.hasRequestRules(t.Host, port) {
		reason := "a request rule limits what may be sent there, and the proxy checks it only on traffic it decrypts (proxy.mitm)"
		ex.deny(audit.RuleRequest, reason)
		body := fmt.Sprintf("devsandbox proxy: CONNECT %s refused: %s.\n", hostPort(t.Host, port), reason)
		return s.reject(ctx, ex, http.StatusForbidden, body), host
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.tunnel}, host
}

func (s *Server) reject(ctx *goproxy.ProxyCtx, ex *exchange, code int, body string) *goproxy.ConnectAction {
	ex.setStatus(code)
	ctx.Resp = textResponse(ctx.Req, code, body)
	return &goproxy.ConnectAction{Action: goproxy.ConnectReject}
}

// tunnel dials the checked target, answers 200 and relays bytes both ways until both
// directions end; it runs inside the handler, so Shutdown waits for it.
func (s *Server) tunnel(req *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
	defer client.Close()
	ex := exchangeFrom(req.Context())
	target, err := s.dialer.DialTarget(req.Context(), ex.target)
	if err != nil {
		ex.fail(err)
		ex.setStatus(http.StatusBadGateway)
		_ = client.SetWriteDeadline(time.Now().Add(s.cfg.ReadHeaderTimeout))
		_ = textResponse(req, http.StatusBadGateway, "devsandbox proxy: "+err.Error()+"\n").Write(client)
		return
	}
	s.track.addConn(target)
	defer s.track.removeConn(target)
	defer target.Close()
	_ = client.SetWriteDeadline(time.Now().Add(s.cfg.TunnelIdleTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ex.fail(err)
		return
	}
	ex.setStatus(http.StatusOK)
	_, _ = pipe(client, target, s.cfg.TunnelIdleTimeout, &ex.up, &ex.down)
}

// pipe copies client→target (counted in up) and target→client (down) until both
// directions end. A direction ends at EOF, closing the write half of the other side so
// half-closing protocols work; at an error, closing both connections so the other
// direction ends too; or when no byte has moved either way for idle. Bytes the client
// sent with its CONNECT go to the target first; then each direction is spliced in the
// kernel where both ends are plain sockets (spliceRelay), and copied otherwise. It
// reports which directions were spliced.
func pipe(client, target net.Conn, idle time.Duration, up, down *atomic.Int64) (upSpliced, downSpliced bool) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	if bc, ok := client.(*bufferedConn); ok {
		_ = target.SetWriteDeadline(time.Now().Add(idle))
		nw, err := target.Write(bc.early)
		up.Add(int64(nw))
		if err != nil {
			client.Close()
			target.Close()
			return false, false
		}
		client = bc.Conn // the early bytes are sent: both directions use the socket itself
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if upSpliced = spliceRelay(target, client, idle, &last, up); !upSpliced {
			relay(target, client, idle, &last, up)
		}
	}()
	if downSpliced = spliceRelay(client, target, idle, &last, down); !downSpliced {
		relay(client, target, idle, &last, down)
	}
	<-done
	return upSpliced, downSpliced
}

// relay copies src to dst through a buffer under pipe's contract.
func relay(dst, src net.Conn, idle time.Duration, last, n *atomic.Int64) {
	buf := make([]byte, 64<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		nr, err := src.Read(buf)
		if nr > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			nw, werr := dst.Write(buf[:nr])
			n.Add(int64(nw))
			if werr != nil {
				src.Close()
				dst.Close()
				return
			}
		}
		switch {
		case err == nil:
		case isTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle:
			// this direction is quiet but the other one is moving
		case errors.Is(err, io.EOF):
			closeWrite(dst)
			return
		default:
			src.Close()
			dst.Close()
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// textResponse is a plain-text response the proxy makes itself.
func textResponse(req *http.Request, code int, body string) *http.Response {
	return &http.Response{
		StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":           {"text/plain; charset=utf-8"},
			"X-Content-Type-Options": {"nosniff"},
		},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
