package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRangedEchoMasked is an attack on the response masking: the sandbox asks the
// credential's host, which echoes the header it was sent in a body it serves with
// byte ranges (as Go's http.ServeContent, a caching front or a file store do), for
// the value a few bytes at a time. No piece holds the whole value, so masking that
// looks for the value finds none, and the pieces put together are the value. The
// proxy asks for whole bodies where it adds a credential (no Range, no If-Range), so
// each answer holds the whole value, masked.
func TestRangedEchoMasked(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader("auth="+r.Header.Get("Authorization")))
	})
	c := m.client(t, false)
	const piece = 8
	var got strings.Builder
	for off := 0; off < len("auth=Bearer ")+len(testToken); off += piece {
		resp, body := do(t, c, "GET", "https://example.com/", map[string]string{"Range": "bytes=" + strconv.Itoa(off) + "-" + strconv.Itoa(off+piece-1)})
		switch resp.StatusCode {
		case http.StatusPartialContent:
			got.WriteString(body)
		case http.StatusOK:
			// The whole body, masked: the pieces are over.
			if strings.Contains(body, testToken) {
				t.Fatalf("the whole body carries the value: %q", body)
			}
			return
		default:
			t.Fatalf("range at %d: %d %q", off, resp.StatusCode, body)
		}
	}
	if strings.Contains(got.String(), testToken) {
		t.Errorf("the client read the value back in %d-byte ranges: %q", piece, got.String())
	}
}

// TestRangeHeadersNotForwarded: a request the proxy adds a credential to reaches the
// host without Range and without If-Range (a validator that makes a later ranged
// request a partial answer again), whatever the sandbox sent; a request without a
// credential keeps both.
func TestRangeHeadersNotForwarded(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	seen := make(chan http.Header, 1)
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		_, _ = w.Write([]byte("ok"))
	})
	c := m.client(t, false)
	hdr := map[string]string{"Range": "bytes=0-3", "If-Range": `"v1"`}
	for _, tc := range []struct {
		url  string
		kept bool
	}{{"https://example.com/", false}, {"https://other.test/", true}} {
		resp, body := do(t, c, "GET", tc.url, hdr)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %q", tc.url, resp.StatusCode, body)
		}
		h := <-seen
		for _, name := range []string{"Range", "If-Range"} {
			if got := h.Get(name); (got != "") != tc.kept {
				t.Errorf("%s: the host got %s %q; want it forwarded only where no credential is added (%v)", tc.url, name, got, tc.kept)
			}
		}
	}
}
