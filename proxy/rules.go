package proxy

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
)

// RequestRule limits the requests the proxy lets through to matching hosts, by method
// and path. The proxy applies it where it sees requests: plain HTTP, and HTTPS it
// decrypts (Config.CA). A CONNECT to a matching host that the proxy would not decrypt
// is refused, since the rule could not be checked inside the tunnel.
//
// The configuration file has no key for rules yet; they are a library API
// (Policy.WithRequestRules).
type RequestRule struct {
	Host    string   // host, *.domain, IP or CIDR, optional :port (egress grammar)
	Methods []string // the methods allowed; empty allows every method
	Paths   []string // the path prefixes allowed ("/repos/"); empty allows every path
}

// ReadOnly is the rule that allows only GET, HEAD and OPTIONS to host.
func ReadOnly(host string) RequestRule {
	return RequestRule{Host: host, Methods: []string{http.MethodGet, http.MethodHead, http.MethodOptions}}
}

type requestRule struct {
	RequestRule
	host entry
	text string // reported as Decision.Rule
}

// WithRequestRules returns a copy of p that also applies rules; p is unchanged. A
// request must pass every rule whose host matches. Errors match ErrInvalidEntry.
func (p *Policy) WithRequestRules(rules ...RequestRule) (*Policy, error) {
	q := *p
	q.rules = slices.Clone(p.rules)
	for _, r := range rules {
		e, err := parseEntry(r.Host)
		if err != nil {
			return nil, err
		}
		for _, m := range r.Methods {
			if !validHeaderName(m) {
				return nil, fmt.Errorf("%w: request rule for %s: %q is not a method", ErrInvalidEntry, r.Host, m)
			}
		}
		for _, pre := range r.Paths {
			if !strings.HasPrefix(pre, "/") {
				return nil, fmt.Errorf("%w: request rule for %s: path prefix %q does not start with /", ErrInvalidEntry, r.Host, pre)
			}
		}
		q.rules = append(q.rules, requestRule{RequestRule: r, host: e, text: r.text()})
	}
	return &q, nil
}

func (r RequestRule) text() string {
	s := r.Host
	if len(r.Methods) > 0 {
		s += " methods " + strings.Join(r.Methods, ",")
	}
	if len(r.Paths) > 0 {
		s += " paths " + strings.Join(r.Paths, ",")
	}
	return s
}

// hasRequestRules reports whether a request rule applies to host:port.
func (p *Policy) hasRequestRules(host string, port int) bool {
	host = normalizeHost(host)
	return slices.ContainsFunc(p.rules, func(r requestRule) bool { return r.matches(host, port) })
}

func (r *requestRule) matches(host string, port int) bool { return r.host.targets(host, port) }

// DecideRequest decides on a request to host:port, which the destination policy
// already allowed, by the request rules: a refusal names the rule; with no rule for
// the host, or every matching rule satisfied, it allows with an empty Rule.
func (p *Policy) DecideRequest(host string, port int, method, urlPath string) Decision {
	host = normalizeHost(host)
	// Judge the path a server would serve: "/repos/../admin" is "/admin".
	clean := path.Clean("/" + urlPath)
	if strings.HasSuffix(urlPath, "/") && clean != "/" {
		clean += "/"
	}
	for _, r := range p.rules {
		if !r.matches(host, port) {
			continue
		}
		if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
			return Decision{Rule: r.text, Reason: fmt.Sprintf("only %s may be sent to %s", strings.Join(r.Methods, ", "), r.Host)}
		}
		if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(pre string) bool { return strings.HasPrefix(clean, pre) }) {
			return Decision{Rule: r.text, Reason: fmt.Sprintf("only paths under %s may be requested from %s", strings.Join(r.Paths, ", "), r.Host)}
		}
	}
	return Decision{Allow: true}
}
