package proxy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
// it instead of the secret (some clients refuse to start without their variable). The
// value goes only where the credential says: Header, which the proxy sets itself, so
// the placeholder there (in any form the client wrote it: Bearer, token, Basic) is
// replaced with the whole header. A request to a matching host that carries the
// placeholder anywhere else (another header, a header's name, the path or the query;
// written out, or inside Basic credentials as git sends a URL's or a credential
// helper's password) is refused with 403 before anything is sent, naming where it
// was: the proxy never puts the value where the sandbox chose, since a host that
// reflects that header (an echo endpoint, a debugging header, an error page) would
// hand it back. A request to any other host that carries it is refused alike. Credentials may share a placeholder
// (one key held for several hosts): a request carrying it is then refused only toward
// a host none of them goes to. Request bodies are not searched for placeholders: a
// placeholder carries no secret, a body is streamed (a refusal could only tear a
// request already partly sent, or hold every body back), and an encoded body would
// pass a search anyway; the value never goes into a body (TestPlaceholderInBodyGoesAsIs).
//
// In responses from matching hosts the proxy masks Value, in header values (1xx
// responses' included), trailers and bodies, with Placeholder (or asterisks) of the same length, so a server that
// echoes the header does not hand the secret to the sandbox; and it masks the forms an
// echo commonly takes (see credential.forms): URL and JSON escaping, base64 and
// base64url at any offset, and for a Basic credential the user:password it encodes and
// the password alone. Requests with a credential ask for an unencoded, whole body (no
// byte range, which would hand an echo back in pieces); a gzip or deflate body is
// decoded to be searched, any other encoding is refused (502). Other transformations
// (a hash, a case change, a split the host makes, an archive) are not found.
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
	scheme string     // "https" or "http"
	host   entry      // its port is always set
	masks  []maskForm // what responses must not carry back (forms)
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
		cr := credential{Credential: c, scheme: scheme, host: e}
		cr.masks = cr.computeForms()
		out = append(out, cr)
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

// misplaced is a refusal: a request carried the placeholder of cred where the proxy
// does not swap it: toward a host cred does not go to, or toward one of its hosts in
// where (a header other than cred's, the URL).
type misplaced struct {
	cred  *credential
	where string // "" toward another host
}

func (m *misplaced) Error() string {
	if m.where == "" {
		return fmt.Sprintf("the request carries the placeholder of %s, which the proxy replaces only toward %s and never sends elsewhere", m.cred.Name, m.cred.where())
	}
	return fmt.Sprintf("the request carries the placeholder of %s in %s, where the proxy never swaps it: toward %s the value goes only in the %s header, which the proxy sets itself (send the placeholder there, or nothing)", m.cred.Name, m.where, m.cred.where(), m.cred.Header)
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
// req) to req's headers, or refuses a request that carries a placeholder where the
// proxy does not swap it (*misplaced): the placeholder of a credential for another
// destination anywhere, or of one of this destination's anywhere but a header of a
// credential holding it. It changes req only when it does not refuse.
func applyCredentials(creds []credential, req *http.Request, scheme, host string, port int) (*applied, error) {
	var a applied
	for i := range creds {
		if c := &creds[i]; c.matches(scheme, host, port) {
			a.creds = append(a.creds, c)
		}
	}
	for i := range creds {
		c := &creds[i]
		if c.Placeholder == "" {
			continue
		}
		// The headers where c's placeholder goes: those of the credentials for this
		// destination that hold it (one key may go in two headers of one host).
		own := map[string]bool{}
		for _, m := range a.creds {
			if m.Placeholder == c.Placeholder {
				own[http.CanonicalHeaderKey(m.Header)] = true
			}
		}
		if len(own) == 0 {
			if carries(req, c.Placeholder, nil) != "" {
				return nil, &misplaced{cred: c}
			}
			continue
		}
		if where := carries(req, c.Placeholder, own); where != "" {
			return nil, &misplaced{cred: c, where: where}
		}
	}
	for _, c := range a.creds {
		if c.Value != "" {
			req.Header.Set(c.Header, c.headerValue())
		}
	}
	return &a, nil
}

// carries reports where p appears in req, escaped or not, or in a header's Basic
// credentials: "header NAME" (a header's value or name), "the URL" (its path, query,
// fragment, user or Host), or "" nowhere.
// The values of the headers in skip are not searched.
func carries(req *http.Request, p string, skip map[string]bool) string {
	for name, vs := range req.Header {
		if strings.Contains(name, p) {
			return "a header's name"
		}
		if skip[http.CanonicalHeaderKey(name)] {
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, p) || inBasic(v, p) {
				return "header " + name
			}
		}
	}
	u := req.URL
	for _, s := range []string{u.Path, u.RawPath, u.RawQuery, u.Fragment, req.Host, u.User.String()} {
		if strings.Contains(s, p) {
			return "the URL"
		}
	}
	if q, err := url.QueryUnescape(u.RawQuery); err == nil && strings.Contains(q, p) {
		return "the URL"
	}
	return ""
}

// inBasic reports whether v is HTTP Basic credentials (RFC 7617: the scheme, any case,
// then the base64 of user:password) holding p. git and curl send a password so (a
// URL's user:password, a credential helper's, an http.extraHeader's), where p is not
// written out.
func inBasic(v, p string) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	return err == nil && strings.Contains(string(b), p)
}

// redactHeader masks the values of a's credentials, in each of their forms, in h.
func (a *applied) redactHeader(h http.Header) {
	for _, c := range a.creds {
		if c.Value == "" {
			continue
		}
		for _, f := range c.forms() {
			from, to := string(f.from), string(f.to)
			for _, vs := range h {
				for j, v := range vs {
					if strings.Contains(v, from) {
						vs[j] = strings.ReplaceAll(v, from, to)
					}
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
