package proxy

import (
	"errors"
	"net/http"
	"net/http/httptrace"

	"github.com/elazarl/goproxy"
)

// roundTrip forwards a plain HTTP request through the checked transport. A policy
// denial becomes a 403 naming the rule and the flag; any other failure a 502.
func (s *Server) roundTrip(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	ex := exchangeFrom(req.Context())
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), ex.trace()))
	resp, err := s.tr.RoundTrip(req)
	if err == nil {
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
