package proxy

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

// handler wraps goproxy with what every request needs: the credential check (TCP),
// the audit exchange in the context, byte counting, shutdown tracking and the record.
func (s *Server) handler(requireAuth bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.track.begin()
		defer s.track.end()
		ex := newExchange(r, s.cfg.Now())
		defer func() { s.record(ex) }()
		rw := newResponseWriter(w, ex, &s.track, s.cfg.TunnelIdleTimeout)
		rw.spliced = &s.spliced
		if requireAuth && !s.authorized(r) {
			ex.deny(audit.RuleAuth, "missing or wrong proxy credential")
			ex.local.Store(true)
			rw.Header().Set("Proxy-Authenticate", `Basic realm="devsandbox"`)
			http.Error(rw, "devsandbox proxy: authentication required", http.StatusProxyAuthRequired)
			return
		}
		r.Header.Del("Proxy-Authorization") // never forwarded, whatever the endpoint
		if reason := badRequest(r); reason != "" {
			ex.deny(audit.RuleBadRequest, reason)
			ex.local.Store(true)
			http.Error(rw, "devsandbox proxy: "+reason, http.StatusBadRequest)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &countingBody{ReadCloser: r.Body, n: &ex.up}
		}
		r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
		s.gp.ServeHTTP(rw, r)
		if rw.hijacked != nil {
			s.track.removeConn(rw.hijacked)
		}
	})
}

// badRequest says why r is not something the proxy forwards, or "": a CONNECT without
// host:port, a request line without an absolute http(s) URL, or a malformed target.
func badRequest(r *http.Request) string {
	if r.Method == http.MethodConnect {
		host, _, err := splitHostPort(r.URL.Host)
		if err != nil {
			return "CONNECT needs host:port"
		}
		return badTarget(host)
	}
	if !r.URL.IsAbs() {
		return "not a proxy request (the request line needs an absolute URL)"
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return "unsupported scheme " + r.URL.Scheme
	}
	return badTarget(r.URL.Hostname())
}

// badTarget says why host is not a destination, or "": only a host name (no wildcard)
// or an IP address without a zone is, and not an unspecified address, which reaches
// the proxy's own host when dialled. A malformed target is refused before any policy
// sees it, so it is never logged as a denial that an allow entry could lift.
func badTarget(host string) string {
	h := normalizeHost(host)
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "an address with a zone is not a destination"
		}
		if class, what := audit.Classify(a); class == audit.ClassUnspecified {
			return h + " is " + what + ", which reaches the proxy's own host: not a destination"
		}
		return ""
	}
	if onlyDigitsAndDots(h) || egress.ValidName(h) != nil {
		return "the target is not a host name or IP address"
	}
	return ""
}

func onlyDigitsAndDots(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

// authorized checks Proxy-Authorization: Basic against the session credential in
// constant time.
func (s *Server) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, s.cred) == 1
}

func (s *Server) record(ex *exchange) {
	s.writeRecord(ex.record(s.cfg.Session, s.cfg.Now()))
}

func (s *Server) writeRecord(rec audit.Record) {
	if s.log == nil {
		return
	}
	if err := s.log.Write(rec); err != nil {
		s.cfg.ErrorLog.Printf("proxy: writing the audit log: %v", err)
	}
}
