package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strings"

	"github.com/elazarl/goproxy"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// roundTrip forwards a plain HTTP request through the checked transport, after the
// request rules and credentials (screen). A policy denial becomes a 403 naming the rule
// and the flag; any other failure a 502.
func (s *Server) roundTrip(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	ex := exchangeFrom(req.Context())
	if refusal := s.screen(req, ex); refusal != "" {
		ex.local.Store(true)
		return textResponse(req, http.StatusForbidden, refusal), nil
	}
	if resp := s.screenPush(req, ex); resp != nil {
		return resp, nil
	}
	var resp *http.Response
	var err error
	if sendsDirect(req) {
		resp, err = s.up.roundTrip(req, ex)
	} else {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), ex.trace()))
		resp, err = s.tr.RoundTrip(req)
	}
	if err == nil {
		a := ex.appliedCreds()
		if a != nil {
			a.redactHeader(resp.Header)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if err := a.upgraded(resp, ex); err != nil {
				resp.Body.Close()
				ex.local.Store(true)
				ex.fail(err)
				return textResponse(req, http.StatusBadGateway, fmt.Sprintf("devsandbox proxy: the response of %s was refused: %v.\n", req.URL.Host, err)), nil
			}
			return resp, nil
		}
		if a != nil {
			if err := a.redactBody(resp); err != nil {
				resp.Body.Close()
				ex.local.Store(true)
				return textResponse(req, http.StatusBadGateway, fmt.Sprintf("devsandbox proxy: the response of %s was refused: %v.\n", req.URL.Host, err)), nil
			}
		}
		return resp, nil
	}
	ex.local.Store(true)
	var denied *DeniedError
	if errors.As(err, &denied) {
		ex.decide(denied.Decision, denied)
		return textResponse(req, http.StatusForbidden, denyBody(req.Method, denied.Host, denied.Port, denied.Decision)), nil
	}
	ex.fail(err)
	return textResponse(req, http.StatusBadGateway, "devsandbox proxy: "+err.Error()+"\n"), nil
}

// denyBody is the text of a 403: the request, the rule and reason, and the flag that
// would allow it (or, for a deny entry, that no flag will).
func denyBody(method, host string, port int, d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "devsandbox proxy: %s %s refused by rule %q: %s.\n", method, hostPort(host, port), d.Rule, d.Reason)
	switch d.Rule {
	case audit.RulePrivate:
		if _, err := netip.ParseAddr(normalizeHost(host)); err != nil && audit.ByAddressOnly(d.Special) && d.Addr.IsValid() {
			// A host-name entry never opens it (Policy.names): only the address does.
			fmt.Fprintf(&b, "No host-name entry opens that address, whose choice is the name's DNS's: to allow the address itself, run devsandbox with --allow %s (or add it to egress.allow).\n", audit.AllowEntry(d.Addr.String(), port))
			break
		}
		fmt.Fprintf(&b, "To allow it, run devsandbox with --allow %s (or add it to egress.allow).\n", audit.AllowEntry(host, port))
	case audit.RuleDefault:
		fmt.Fprintf(&b, "To allow it, run devsandbox with --allow %s (or add it to egress.allow).\n", audit.AllowEntry(host, port))
	case audit.RuleHost:
		b.WriteString("The proxy runs on your host and never connects to the host's own loopback or unspecified addresses; no entry changes that.\n")
	default:
		fmt.Fprintf(&b, "A deny entry wins over every allow entry: remove %q from egress.deny to allow it.\n", d.Rule)
	}
	return b.String()
}
