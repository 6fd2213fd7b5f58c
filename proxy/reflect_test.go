package proxy

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// reflector is an origin that echoes back the request header named by the query's h
// (Authorization by default), encoded as enc says (plain, b64, b64url, url, basic:
// base64-decoded after "Basic "), in the body, in a response header (where=header), in a
// trailer (where=trailer), in a 103 Early Hints response before the final one
// (where=early), or gzip'd whatever the request asked for (where=gzip), as
// echo endpoints, debugging headers and error pages do.
func reflector(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("h")
	if name == "" {
		name = "Authorization"
	}
	v := r.Header.Get(name)
	switch q.Get("enc") {
	case "b64":
		v = base64.StdEncoding.EncodeToString([]byte("echo:" + v))
	case "b64url":
		v = base64.URLEncoding.EncodeToString([]byte("e:" + v))
	case "url":
		v = url.QueryEscape("x=" + v)
	case "basic":
		b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "Basic "))
		v = "user " + string(b)
	}
	switch q.Get("where") {
	case "header":
		w.Header().Set("X-Reflected", v)
	case "early":
		w.Header().Set("X-Reflected", v)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("X-Reflected")
		io.WriteString(w, "after the hints")
	case "trailer":
		w.Header().Set("Trailer", "X-Reflected")
		io.WriteString(w, "see the trailer")
		w.Header().Set("X-Reflected", v)
	case "gzip":
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, v)
		zw.Close()
	default:
		io.WriteString(w, v)
	}
}

// recovered reports whether the client could read token back from what it got:
// literally, or after undoing the reflector's encodings.
func recovered(token string, got ...string) bool {
	for _, s := range got {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ':' || r == '\n' }) {
			cands := []string{f}
			if b, err := base64.StdEncoding.DecodeString(f); err == nil {
				cands = append(cands, string(b))
			}
			if b, err := base64.URLEncoding.DecodeString(f); err == nil {
				cands = append(cands, string(b))
			}
			if u, err := url.QueryUnescape(f); err == nil {
				cands = append(cands, u)
			}
			for _, c := range cands {
				if strings.Contains(c, token) {
					return true
				}
			}
		}
		if strings.Contains(s, token) {
			return true
		}
	}
	return false
}

// TestPlaceholderOnlyInItsHeader is the attack on the swap: the sandbox puts the
// placeholder into a header the credential's host reflects (X-Debug, a cookie) and
// reads the value back transformed, where the literal masking does not find it. The
// proxy puts the value only in the credential's header; a placeholder anywhere else
// in a request to the credential's host (another header, the URL) is refused (403,
// audited as rule "placeholder" naming where it was), before anything is sent.
func TestPlaceholderOnlyInItsHeader(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "GITHUB_TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, reflector)
	c := m.client(t, false)
	for _, tc := range []struct {
		url   string
		hdr   map[string]string
		where string
	}{
		{"https://example.com/?h=X-Debug&enc=b64", map[string]string{"X-Debug": testPlaceholder}, "header X-Debug"},
		{"https://example.com/?h=Cookie&enc=url&where=header", map[string]string{"Cookie": "s=" + testPlaceholder}, "header Cookie"},
		{"https://example.com/?h=X-Debug&enc=b64url", map[string]string{"X-Debug": "a" + testPlaceholder, "Authorization": "Bearer " + testPlaceholder}, "header X-Debug"},
		{"https://example.com/" + testPlaceholder, nil, "the URL"},
		{"https://example.com/?key=" + testPlaceholder, nil, "the URL"},
	} {
		resp, body := do(t, c, "GET", tc.url, tc.hdr)
		if recovered(testToken, body, resp.Header.Get("X-Reflected")) {
			t.Errorf("%s %v: the client read the token back: %q %q", tc.url, tc.hdr, body, resp.Header.Get("X-Reflected"))
		}
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "placeholder of GITHUB_TOKEN") || !strings.Contains(body, tc.where) {
			t.Errorf("%s %v: %d %q, want 403 naming the placeholder and %s", tc.url, tc.hdr, resp.StatusCode, body, tc.where)
		}
	}
	if n := m.origin.hits.Load(); n != 0 {
		t.Errorf("the origin was hit %d times by requests carrying the placeholder where it is not swapped", n)
	}
	// In its own header, in any form the client writes it, it works as before.
	for _, a := range []string{"Bearer " + testPlaceholder, "token " + testPlaceholder, "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+testPlaceholder))} {
		resp, _ := do(t, c, "GET", "https://example.com/", map[string]string{"Authorization": a})
		if got := <-m.seen; resp.StatusCode != 200 || got.Header.Get("Authorization") != "Bearer "+testToken {
			t.Errorf("Authorization %q: %d, the origin saw %q", a, resp.StatusCode, got.Header.Get("Authorization"))
		}
	}
	m.h.shutdown(t)
	var denied []string
	for _, r := range records(t, m.h) {
		if r.Decision == audit.DecisionDeny && r.Rule == audit.RulePlaceholder {
			denied = append(denied, r.Reason)
			if strings.Contains(r.Reason, testPlaceholder) || strings.Contains(r.Reason, testToken) {
				t.Errorf("the audit reason holds a secret: %q", r.Reason)
			}
		}
	}
	if len(denied) != 5 || !strings.Contains(denied[0], "header X-Debug") {
		t.Errorf("placeholder refusals logged: %q, want 5 naming where", denied)
	}
}

// TestTransformedEchoMasked is the attack on the response side: the credential's host
// echoes its own Authorization header encoded (base64 at any offset, base64url, URL
// escaping, a Basic credential decoded), in a header, the body, a trailer, or gzip'd
// although the proxy asked for identity. The client never reads the token back; a
// body the proxy cannot decode is refused (502).
func TestTransformedEchoMasked(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + testToken))
	for _, tc := range []struct {
		cred Credential
		path string
	}{
		{Credential{Format: "Bearer {}", Value: testToken}, "/?enc=b64"},
		{Credential{Format: "Bearer {}", Value: testToken}, "/?enc=b64url&where=header"},
		{Credential{Format: "Bearer {}", Value: testToken}, "/?enc=url&where=header"},
		{Credential{Format: "Bearer {}", Value: testToken}, "/?enc=b64&where=trailer"},
		{Credential{Format: "Bearer {}", Value: testToken}, "/?where=gzip"},
		{Credential{Format: "Bearer {}", Value: testToken}, "/?where=gzip&enc=b64"},
		{Credential{Format: "Bearer {}", Value: "a/b+c=" + testToken}, "/?enc=url"},
		// git over HTTPS: the value is base64 of user:token, sent as Basic; the host
		// echoes the user and token it decoded (an error page naming them).
		{Credential{Format: "Basic {}", Value: basic}, "/?enc=basic"},
		{Credential{Format: "Basic {}", Value: basic}, "/?enc=b64"},
	} {
		tc.cred.Host, tc.cred.Header, tc.cred.Name = "example.com", "Authorization", "TOKEN"
		m := newMITM(t, Config{Credentials: []Credential{tc.cred}}, reflector)
		c := m.client(t, tc.path == "/?where=gzip&enc=b64")
		resp, body := do(t, c, "GET", "https://example.com"+tc.path, nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %q", tc.path, resp.StatusCode, body)
		}
		if recovered(testToken, body, resp.Header.Get("X-Reflected"), resp.Trailer.Get("X-Reflected")) ||
			recovered(tc.cred.Value, body, resp.Header.Get("X-Reflected"), resp.Trailer.Get("X-Reflected")) {
			t.Errorf("%s (%s): the client read the value back: body %q, header %q, trailer %q", tc.path, tc.cred.Format, body, resp.Header.Get("X-Reflected"), resp.Trailer.Get("X-Reflected"))
		}
	}
	// Headers of a 1xx response before the final one are masked too.
	cred0 := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m0 := newMITM(t, Config{Credentials: []Credential{cred0}}, reflector)
	var early []string
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			early = append(early, h.Get("X-Reflected"))
			return nil
		},
	}), "GET", "https://example.com/?enc=b64&where=early", nil)
	resp0, err := m0.client(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp0.Body.Close()
	if len(early) != 1 || recovered(testToken, early...) {
		t.Errorf("the 103 response's headers: %q, want one, masked", early)
	}
	// The record holds the final status, not the informational one before it.
	m0.h.shutdown(t)
	for _, r := range records(t, m0.h) {
		if r.Method == "GET" && r.Status != http.StatusOK {
			t.Errorf("a 200 after a 103 is recorded with status %d", r.Status)
		}
	}
	// An encoding the proxy cannot search is refused, never passed.
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		io.WriteString(w, r.Header.Get("Authorization"))
	})
	resp, body := do(t, m.client(t, false), "GET", "https://example.com/", nil)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, testToken) {
		t.Errorf("a br body from the credential's host: %d %q, want 502", resp.StatusCode, body)
	}
}

// TestMaskForms: every form the proxy masks keeps its length (a sized body keeps its
// Content-Length) and is long enough not to mask ordinary text by chance; each base64
// form is found in the encoding of the value at its offset, whatever surrounds it.
func TestMaskForms(t *testing.T) {
	c := &credential{Credential: Credential{Format: "Basic {}", Value: base64.StdEncoding.EncodeToString([]byte("u:" + testToken)), Placeholder: testPlaceholder}}
	forms := c.forms()
	for _, f := range forms {
		if len(f.from) != len(f.to) || bytes.Equal(f.from, f.to) || len(f.from) < minFormLen {
			t.Errorf("form %q -> %q", f.from, f.to)
		}
	}
	for _, around := range []string{"", "a", "ab", "abc", "Bearer ", "x-access-token:"} {
		enc := base64.StdEncoding.EncodeToString([]byte(around + testToken + "!?"))
		if !slices.ContainsFunc(forms, func(f maskForm) bool { return strings.Contains(enc, string(f.from)) }) {
			t.Errorf("no form found in the base64 of %q+token: %s", around, enc)
		}
	}
	if got := len((&credential{Credential: Credential{Value: "short"}}).computeForms()); got != 1 {
		t.Errorf("a 5-byte value has %d forms, want the value alone", got)
	}
}
