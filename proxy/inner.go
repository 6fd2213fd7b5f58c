package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"strconv"
	"sync"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// innerHandler serves the requests of a decrypted connection to t: each is checked
// (Host, request rules, credentials), recorded, and forwarded by s.rp to t over the
// checked transport, which checks the destination again at dial time.
func (s *Server) innerHandler(t Target, scheme string, batch *recordBatcher, handlers *tracker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.begin()
		defer handlers.end()
		ex := &exchange{start: s.cfg.Now(), method: r.Method, host: t.Host, port: t.Port, path: r.URL.Path,
			decision: audit.DecisionError, mitm: true, scheme: scheme}
		defer func() { s.record(ex) }()
		if batch != nil {
			ex.gather = &gathering{batch: batch}
			defer func() {
				if err := ex.gather.end(); err != nil {
					ex.fail(fmt.Errorf("sending the response's last bytes to the client: %w", err))
				}
			}()
		}
		rw := newResponseWriter(w, ex, &s.track, s.cfg.TunnelIdleTimeout)
		defer func() {
			if rw.hijacked != nil {
				s.track.removeConn(rw.hijacked)
			}
		}()
		if !sameHost(r.Host, t) {
			ex.deny(audit.RuleMisdirected, "the request names "+r.Host+" inside a tunnel to "+hostPort(t.Host, t.Port))
			ex.local.Store(true)
			writeText(rw, http.StatusMisdirectedRequest, fmt.Sprintf("devsandbox proxy: %s is not %s, the host this connection was opened for.\n", r.Host, hostPort(t.Host, t.Port)))
			return
		}
		if r.Method == http.MethodConnect {
			// The tunnel already goes to its target; forwarded, a CONNECT (HTTP/2's
			// extended one for a WebSocket too) would carry the credential to a host
			// that may tunnel on, and ReverseProxy relays no tunnel anyway.
			ex.deny(audit.RuleBadRequest, "CONNECT inside a tunnel to "+hostPort(t.Host, t.Port))
			ex.local.Store(true)
			writeText(rw, http.StatusMethodNotAllowed, "devsandbox proxy: CONNECT inside a tunnel to "+hostPort(t.Host, t.Port)+" is not forwarded: the tunnel already goes there.\n")
			return
		}
		if refusal := s.screen(r, ex); refusal != "" {
			ex.local.Store(true)
			writeText(rw, http.StatusForbidden, refusal)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &countingBody{ReadCloser: r.Body, n: &ex.up}
		}
		if resp := s.screenPush(r, ex); resp != nil {
			writeResponse(rw, resp)
			return
		}
		ctx := httptrace.WithClientTrace(context.WithValue(r.Context(), exchangeKey{}, ex), ex.trace())
		s.rp.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// screen applies the request rules and the credentials to a request the proxy sees
// (plain HTTP, or decrypted) for ex's destination. It returns the body of a 403 when
// the request is refused, having recorded why; otherwise the request carries its
// credentials and ex knows what to mask in the response.
func (s *Server) screen(r *http.Request, ex *exchange) string {
	if d := s.cfg.Policy.DecideRequest(ex.host, ex.port, r.Method, r.URL.Path); !d.Allow {
		ex.deny(d.Rule, d.Reason)
		return fmt.Sprintf("devsandbox proxy: %s %s%s refused by rule %q: %s.\n", r.Method, hostPort(ex.host, ex.port), r.URL.Path, d.Rule, d.Reason)
	}
	a, err := applyCredentials(s.creds, r, ex.scheme, ex.host, ex.port)
	var mp *misplaced
	if errors.As(err, &mp) {
		ex.deny(audit.RulePlaceholder, err.Error())
		return fmt.Sprintf("devsandbox proxy: %s %s refused: %v.\n", r.Method, hostPort(ex.host, ex.port), err)
	}
	a.askIdentity(r)
	ex.setApplied(a)
	return ""
}

// newReverseProxy forwards decrypted requests to their exchange's destination over
// the checked transport; the exchange is in each request's context.
func (s *Server) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			ex := exchangeFrom(pr.In.Context())
			pr.Out.URL.Scheme = ex.scheme
			pr.Out.URL.Host = hostPort(ex.host, ex.port)
			pr.Out.Host = pr.In.Host
			// Rewrite drops these; a transparent proxy passes what the client sent.
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:  s.tr,
		BufferPool: &bufferPool{},
		// Every write of a body goes to the client at once. ReverseProxy does that
		// itself only for a stream (no Content-Length, or server-sent events); a sized
		// body's first bytes otherwise waited in the response writer's buffer (2 KiB
		// for HTTP/1.1, 4 KiB for HTTP/2), and with them the response's head, until
		// more came: for ever from an origin that waits for the client.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			ex := exchangeFrom(resp.Request.Context())
			a := ex.appliedCreds()
			if a != nil {
				a.redactHeader(resp.Header)
			}
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return a.upgraded(resp, ex)
			}
			if a != nil {
				if err := a.redactBody(resp); err != nil {
					return err
				}
			}
			ex.gather.start()
			return nil
		},
		ErrorHandler: s.upstreamError,
		ErrorLog:     s.cfg.ErrorLog,
	}
}

// upstreamError answers a decrypted request the transport could not forward: 403
// naming the rule for a destination the dial-time check refused, else 502.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	ex := exchangeFrom(r.Context())
	ex.local.Store(true)
	var denied *DeniedError
	if errors.As(err, &denied) {
		ex.decide(denied.Decision, denied)
		writeText(w, http.StatusForbidden, denyBody(r.Method, denied.Host, denied.Port, denied.Decision))
		return
	}
	ex.fail(err)
	if errors.Is(err, context.Canceled) {
		return // the client went away; nobody reads an answer
	}
	writeText(w, http.StatusBadGateway, "devsandbox proxy: "+err.Error()+"\n")
}

// writeText answers with a plain-text body the proxy makes itself (see textResponse).
func writeText(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// writeResponse answers with a response the proxy made itself.
func writeResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// bufferPool lends ReverseProxy copy buffers larger than its 32 KiB default: fewer,
// larger writes to the client's TLS connection.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 256<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
