package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ErrInvalidCredential is the class of errors for a Credential the proxy cannot use.
var ErrInvalidCredential = errors.New("invalid credential")

// Credential is a secret the proxy adds to requests for matching hosts, so the sandbox
// never holds it. It applies where the proxy sees requests: plain HTTP, and HTTPS it
// decrypts (Config.CA).
//
// Host says where it goes, scheme and port included: an entry of the egress grammar,
// optionally after "https://" or "http://". Without a scheme, or with https://, the
// credential goes only over TLS the proxy itself speaks to the host (its own verified
// connection), to port 443 unless the entry names another; with http://, or a bare
// port 80, only over plain HTTP to that port (80 unless named), where it crosses the
// network in clear. The sandbox cannot change which: a request to the host by the
// other scheme, another port, or plain HTTP inside a decrypted CONNECT does not get
// it (and plain HTTP inside a CONNECT that expects TLS is refused).
//
// For a request to a matching host the proxy sets Header to Format with "{}" replaced
// by Value, over anything the client sent. When Placeholder is set, the sandbox holds
// it instead of the secret (some clients refuse to start without their variable): in
// requests to matching hosts the proxy replaces it with Value in every header value;
// a request to any other host that carries it (a header, the path or the query) is
// refused with 403 before anything is sent. Credentials may share a placeholder (one
// key held for several hosts): a request carrying it is then refused only toward a
// host none of them goes to. The proxy never replaces a placeholder in
// a URL or a body: those are what servers echo back and log, and a swap there would
// turn an echo into a leak. Request bodies are not searched for placeholders.
//
// In responses from matching hosts the proxy masks Value, in header values and in
// bodies that are not content-encoded, with Placeholder (or asterisks) of the same
// length, so a server that echoes the header does not hand the secret to the sandbox.
// A compressed body is passed as it is.
type Credential struct {
	Host        string // where it goes: [https:// | http://] host, *.domain, IP or CIDR [:port] (see above)
	Header      string // the header it is sent in, such as Authorization
	Format      string // how, with "{}" for Value ("Bearer {}"); "" means Value alone
	Value       string // the secret; "" adds nothing (its placeholder is still guarded)
	Placeholder string // the sandbox's stand-in for Value; "" when none
	Name        string // what logs and refusals call it (the sandbox variable); never the value
}

// credential is a checked Credential.
type credential struct {
	Credential
	scheme string // "https" or "http"
	host   entry  // its port is always set
}

func compileCredentials(cs []Credential) ([]credential, error) {
	out := make([]credential, 0, len(cs))
	for i, c := range cs {
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%w %d (%s): %s", ErrInvalidCredential, i, c.Name, fmt.Sprintf(format, a...))
		}
		scheme, e, err := parseCredentialHost(c.Host)
		if err != nil {
			return nil, fail("%v", err)
		}
		switch {
		case !validHeaderName(c.Header):
			return nil, fail("%q is not a header name", c.Header)
		case c.Format != "" && !strings.Contains(c.Format, "{}"):
			return nil, fail("format %q has no {}", c.Format)
		case strings.ContainsAny(c.Value, "\r\n\x00"):
			return nil, fail("the value holds a line break or NUL")
		case c.Placeholder != "" && len(c.Placeholder) < 16:
			return nil, fail("a placeholder of %d bytes is too short to be told apart", len(c.Placeholder))
		case c.Placeholder != "" && c.Value != "" && strings.Contains(c.Value, c.Placeholder):
			return nil, fail("the placeholder is part of the value")
		}
		out = append(out, credential{Credential: c, scheme: scheme, host: e})
	}
	return out, nil
}

// parseCredentialHost parses a Credential.Host: the scheme ("https" unless written
// http:// or with a bare port 80) and the entry, whose port is set (443 or 80 when the
// entry names none).
func parseCredentialHost(h string) (string, entry, error) {
	scheme := ""
	if rest, ok := strings.CutPrefix(h, "https://"); ok {
		scheme, h = "https", rest
	} else if rest, ok := strings.CutPrefix(h, "http://"); ok {
		scheme, h = "http", rest
	}
	e, err := parseEntry(h)
	if err != nil {
		return "", entry{}, err
	}
	if scheme == "" {
		scheme = "https"
		if e.port == 80 {
			scheme = "http"
		}
	}
	if e.port == 0 {
		e.port = map[string]int{"https": 443, "http": 80}[scheme]
	}
	return scheme, e, nil
}

// matches reports whether the credential goes to a request the proxy forwards by
// scheme to host:port (see entry.targets).
func (c *credential) matches(scheme, host string, port int) bool {
	return c.scheme == scheme && c.host.targets(host, port)
}

// where is the credential's destination as a URL prefix: "https://api.test" (port 443
// implied), "http://svc.test:8080".
func (c *credential) where() string {
	h := strings.TrimPrefix(strings.TrimPrefix(c.Host, "https://"), "http://")
	return c.scheme + "://" + h
}

func (c *credential) headerValue() string {
	if c.Format == "" {
		return c.Value
	}
	return strings.ReplaceAll(c.Format, "{}", c.Value)
}

// mask is what stands for Value in responses: as long as Value, so lengths hold.
func (c *credential) mask() string {
	if len(c.Placeholder) == len(c.Value) {
		return c.Placeholder
	}
	return strings.Repeat("*", len(c.Value))
}

// misplaced is a refusal: a request carried the placeholder of cred to a host cred
// does not go to.
type misplaced struct{ cred *credential }

func (m *misplaced) Error() string {
	return fmt.Sprintf("the request carries the placeholder of %s, which the proxy replaces only toward %s and never sends elsewhere", m.cred.Name, m.cred.where())
}

// applied is what applyCredentials did to one request: the credentials that went to
// it, whose values the response must not carry back.
type applied struct {
	creds []*credential
}

func (a *applied) names() string {
	names := make([]string, 0, len(a.creds))
	for _, c := range a.creds {
		if c.Value != "" {
			names = append(names, c.Header)
		}
	}
	return strings.Join(names, ",")
}

// applyCredentials adds the credentials for scheme://host:port (how the proxy forwards
// req) to req's headers and swaps their placeholders, or refuses a request that
// carries the placeholder of a credential for another destination (*misplaced). It
// changes req only when it does not refuse.
func applyCredentials(creds []credential, req *http.Request, scheme, host string, port int) (*applied, error) {
	var a applied
	for i := range creds {
		if c := &creds[i]; c.matches(scheme, host, port) {
			a.creds = append(a.creds, c)
		}
	}
	for i := range creds {
		c := &creds[i]
		if c.Placeholder == "" || slices.ContainsFunc(a.creds, func(m *credential) bool { return m.Placeholder == c.Placeholder }) {
			continue
		}
		if carries(req, c.Placeholder) {
			return nil, &misplaced{cred: c}
		}
	}
	for _, c := range a.creds {
		if c.Placeholder != "" && c.Value != "" {
			for _, vs := range req.Header {
				for j, v := range vs {
					vs[j] = strings.ReplaceAll(v, c.Placeholder, c.Value)
				}
			}
		}
	}
	for _, c := range a.creds {
		if c.Value != "" {
			req.Header.Set(c.Header, c.headerValue())
		}
	}
	return &a, nil
}

// carries reports whether p appears in req's headers or URL, escaped or not.
func carries(req *http.Request, p string) bool {
	for name, vs := range req.Header {
		if strings.Contains(name, p) {
			return true
		}
		for _, v := range vs {
			if strings.Contains(v, p) {
				return true
			}
		}
	}
	u := req.URL
	for _, s := range []string{u.Path, u.RawPath, u.RawQuery, u.Fragment, req.Host, u.User.String()} {
		if strings.Contains(s, p) {
			return true
		}
	}
	if q, err := url.QueryUnescape(u.RawQuery); err == nil && strings.Contains(q, p) {
		return true
	}
	return false
}

// redactHeader masks the values of a's credentials in h.
func (a *applied) redactHeader(h http.Header) {
	for _, c := range a.creds {
		if c.Value == "" {
			continue
		}
		for _, vs := range h {
			for j, v := range vs {
				if strings.Contains(v, c.Value) {
					vs[j] = strings.ReplaceAll(v, c.Value, c.mask())
				}
			}
		}
	}
}

// validHeaderName reports whether s is an HTTP field name (an RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
