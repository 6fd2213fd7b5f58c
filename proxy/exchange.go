package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

type exchangeKey struct{}

// exchange is the audit state of one request or tunnel, shared through the request's
// context by the handler, the dialer and the tunnel.
type exchange struct {
	start  time.Time
	method string
	host   string
	port   int
	path   string
	up     atomic.Int64
	down   atomic.Int64
	target Target      // CONNECT: the checked destination
	local  atomic.Bool // the response is the proxy's own (403, 502): its body is not counted
	mitm   bool        // a decrypted tunnel, or a request inside one
	scheme string      // how the proxy forwards a request: "https" (its own TLS) or "http"; "" for CONNECT

	mu       sync.Mutex
	status   int
	decision string
	rule     string
	reason   string
	special  string
	err      string
	applied  *applied // the credentials the request got

	gather *gathering // a decrypted HTTP/1.1 request's: its response's writes gathered; nil: none
}

func newExchange(r *http.Request, now time.Time) *exchange {
	ex := &exchange{start: now, method: r.Method, decision: audit.DecisionError}
	ex.host = normalizeHost(r.URL.Hostname())
	ex.port, _ = strconv.Atoi(r.URL.Port())
	if r.Method != http.MethodConnect {
		ex.path = r.URL.Path // never RawQuery: queries carry tokens
		ex.scheme = r.URL.Scheme
		if ex.port == 0 && r.URL.Scheme == "https" {
			ex.port = 443
		} else if ex.port == 0 {
			ex.port = 80
		}
	}
	return ex
}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// decide records a policy decision, or err when none was reached.
func (ex *exchange) decide(d Decision, err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	var denied *DeniedError
	switch {
	case errors.As(err, &denied):
		ex.decision, ex.rule, ex.reason, ex.special = audit.DecisionDeny, d.Rule, d.Reason, d.Special
	case d.Rule != "":
		ex.decision, ex.rule, ex.reason, ex.special = audit.DecisionAllow, d.Rule, "", ""
	}
	if err != nil && denied == nil {
		ex.err = err.Error()
	}
}

func (ex *exchange) deny(rule, reason string) {
	ex.mu.Lock()
	ex.decision, ex.rule, ex.reason, ex.special = audit.DecisionDeny, rule, reason, ""
	ex.mu.Unlock()
}

func (ex *exchange) setStatus(code int) {
	ex.mu.Lock()
	ex.status = code
	ex.mu.Unlock()
}

func (ex *exchange) setApplied(a *applied) {
	ex.mu.Lock()
	ex.applied = a
	ex.mu.Unlock()
}

// appliedCreds returns what applyCredentials did to the request, nil when nothing.
func (ex *exchange) appliedCreds() *applied {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.applied == nil || len(ex.applied.creds) == 0 {
		return nil
	}
	return ex.applied
}

func (ex *exchange) fail(err error) {
	ex.mu.Lock()
	ex.err = err.Error()
	ex.mu.Unlock()
}

// trace reports the decision behind the upstream connection a request got, including
// a pooled one that this request did not dial.
func (ex *exchange) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		c := info.Conn
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		if cc, ok := c.(*checkedConn); ok {
			ex.decide(cc.decision, nil)
			if ex.gather != nil {
				ex.gather.up = cc
			}
		}
	}}
}

func (ex *exchange) record(session string, now time.Time) audit.Record {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	rec := audit.Record{
		Kind: audit.KindRequest, Time: ex.start.UTC(), Session: session, Method: ex.method, Host: ex.host, Port: ex.port,
		Path: ex.path, Status: ex.status, BytesUp: ex.up.Load(), BytesDown: ex.down.Load(),
		DurationMS: now.Sub(ex.start).Milliseconds(),
		Decision:   ex.decision, Rule: ex.rule, Reason: ex.reason, Error: ex.err, MITM: ex.mitm, Special: ex.special,
	}
	if ex.applied != nil {
		rec.Credential = ex.applied.names()
	}
	return rec
}
