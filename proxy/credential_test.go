package proxy

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

func TestCompileCredentials(t *testing.T) {
	ok := Credential{Host: "api.test", Header: "Authorization", Format: "Bearer {}", Value: "v", Name: "T"}
	bad := map[string]func(c *Credential){
		"host":              func(c *Credential) { c.Host = "a b" },
		"header":            func(c *Credential) { c.Header = "X Y" },
		"format":            func(c *Credential) { c.Format = "Bearer" },
		"value line break":  func(c *Credential) { c.Value = "a\r\nX-Injected: 1" },
		"short placeholder": func(c *Credential) { c.Placeholder = "abc" },
		"placeholder in value": func(c *Credential) {
			c.Placeholder, c.Value = "0123456789abcdef", "x0123456789abcdefx"
		},
	}
	if _, err := compileCredentials([]Credential{ok}); err != nil {
		t.Fatal(err)
	}
	for name, mod := range bad {
		c := ok
		mod(&c)
		if _, err := compileCredentials([]Credential{c}); !errors.Is(err, ErrInvalidCredential) {
			t.Errorf("%s: %v, want ErrInvalidCredential", name, err)
		}
	}
}

// TestCredentialMatches: a credential goes to its host by its scheme and to its port
// only; without a scheme or port it is HTTPS to 443, never plain HTTP.
func TestCredentialMatches(t *testing.T) {
	cs, err := compileCredentials([]Credential{
		{Host: "*.example.com", Header: "A"}, {Host: "api.test:8443", Header: "B"}, {Host: "10.0.0.0/8", Header: "C"},
		{Host: "http://svc.test:8080", Header: "D"}, {Host: "plain.test:80", Header: "E"}, {Host: "https://tls.test", Header: "F"},
		{Host: "http://web.test", Header: "G"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		scheme, host string
		port         int
		want         string
	}{
		{"https", "api.example.com", 443, "A"}, {"http", "api.example.com", 443, ""}, {"http", "api.example.com", 80, ""},
		{"https", "api.example.com", 8443, ""}, {"https", "example.com", 443, ""},
		{"https", "api.test", 8443, "B"}, {"http", "api.test", 8443, ""}, {"https", "api.test", 443, ""},
		{"https", "10.1.2.3", 443, "C"}, {"http", "10.1.2.3", 80, ""}, {"https", "ten.test", 443, ""}, // a name is not an address
		{"http", "svc.test", 8080, "D"}, {"https", "svc.test", 8080, ""}, {"http", "svc.test", 80, ""},
		{"http", "plain.test", 80, "E"}, {"https", "plain.test", 443, ""},
		{"https", "tls.test", 443, "F"}, {"http", "tls.test", 443, ""},
		{"http", "web.test", 80, "G"}, {"http", "web.test", 8080, ""},
	} {
		var got []string
		for i := range cs {
			if cs[i].matches(tt.scheme, tt.host, tt.port) {
				got = append(got, cs[i].Header)
			}
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("%s://%s:%d: %v, want %q", tt.scheme, tt.host, tt.port, got, tt.want)
		}
	}
	if _, err := compileCredentials([]Credential{{Host: "ftp://x.test", Header: "A"}}); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("an ftp:// host: %v", err)
	}
}

// TestRedactReader: a value split across reads of any size is masked; lengths hold.
func TestRedactReader(t *testing.T) {
	secret := "SECRET-0123456789"
	body := strings.Repeat("x", 70000) + secret + "y" + secret + strings.Repeat("z", 5) + secret[:6]
	want := strings.ReplaceAll(body, secret, strings.Repeat("*", len(secret)))
	for _, chunk := range []int{1, 3, 16, 17, 4096, 1 << 20} {
		// The host's side split anywhere too: half of each read, or a byte at a time.
		for _, src := range []func(io.Reader) io.Reader{iotest.HalfReader, iotest.OneByteReader} {
			a := &applied{creds: []*credential{{Credential: Credential{Value: secret}}}}
			resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(src(strings.NewReader(body)))}
			a.redactBody(resp)
			got, err := io.ReadAll(&chunkReader{r: resp.Body, n: chunk})
			if err != nil || string(got) != want {
				t.Errorf("reads of %d: %v, masked correctly: %v", chunk, err, string(got) == want)
			}
		}
	}
	// An encoded body is decoded and masked, or refused when the proxy cannot decode it:
	// never passed unsearched (an upstream answering "x-none" with a plain body, br).
	var gzb bytes.Buffer
	zw := gzip.NewWriter(&gzb)
	_, _ = zw.Write([]byte("echo " + secret))
	_ = zw.Close()
	for _, tt := range []struct {
		ce   []string
		body []byte
		want string // "" for ErrEncoding
	}{
		{[]string{"gzip"}, gzb.Bytes(), "echo " + strings.Repeat("*", len(secret))},
		{[]string{"identity, gzip"}, gzb.Bytes(), "echo " + strings.Repeat("*", len(secret))},
		{[]string{"x-none"}, []byte(secret), ""},
		{[]string{"br"}, []byte(secret), ""},
		{[]string{"gzip"}, []byte(secret), ""}, // not gzip at all
	} {
		resp := &http.Response{Header: http.Header{"Content-Encoding": tt.ce, "Content-Length": {"99"}}, Body: io.NopCloser(bytes.NewReader(tt.body))}
		err := (&applied{creds: []*credential{{Credential: Credential{Value: secret}}}}).redactBody(resp)
		if tt.want == "" {
			if !errors.Is(err, ErrEncoding) {
				t.Errorf("Content-Encoding %q: %v, want ErrEncoding", tt.ce, err)
			}
			continue
		}
		got, _ := io.ReadAll(resp.Body)
		if err != nil || string(got) != tt.want || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Length") != "" {
			t.Errorf("Content-Encoding %q: %v, %q, header %v", tt.ce, err, got, resp.Header)
		}
	}
	req := httptest.NewRequest("GET", "http://api.example/", nil)
	req.Header.Set("Accept-Encoding", "gzip, br")
	(&applied{creds: []*credential{{Credential: Credential{Value: secret}}}}).askIdentity(req)
	if got := req.Header.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("a request with a credential asks for %q, want identity", got)
	}
}

// chunkReader reads at most n bytes at a time.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestDecideRequest(t *testing.T) {
	p, err := mustPolicy(t, nil, nil, "allow").WithRequestRules(
		ReadOnly("api.test"),
		RequestRule{Host: "*.git.test", Paths: []string{"/org/"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host, method, path string
		allow              bool
	}{
		{"api.test", "GET", "/x", true}, {"api.test", "OPTIONS", "/x", true}, {"api.test", "PUT", "/x", false},
		{"other.test", "PUT", "/x", true},
		{"a.git.test", "POST", "/org/repo", true}, {"a.git.test", "GET", "/other/repo", false},
		{"a.git.test", "GET", "/org/../other/repo", false}, {"a.git.test", "GET", "/org", false},
	} {
		if d := p.DecideRequest(tt.host, 443, tt.method, tt.path); d.Allow != tt.allow {
			t.Errorf("%s %s%s: %+v, want allow %v", tt.method, tt.host, tt.path, d, tt.allow)
		}
	}
	if _, err := p.WithRequestRules(RequestRule{Host: "x.test", Paths: []string{"nope"}}); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("a relative path prefix: %v", err)
	}
}

// TestCredentialSharedPlaceholder: one key held for two hosts (two credentials with
// the same value and placeholder, as two tools reading one variable get) is set
// toward each of them, the placeholder swapped for it; toward a third host the
// placeholder is refused before anything is sent, and the key never goes there.
func TestCredentialSharedPlaceholder(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // host -> Authorization the origin saw
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Host] = r.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "ok")
	}
	a, b, c := newOrigin(t, false, handler), newOrigin(t, false, handler), newOrigin(t, false, handler)
	const key = "sk-shared-0123456789"
	creds := []Credential{
		{Host: "http://a.test:" + a.port(), Header: "Authorization", Format: "Bearer {}", Value: key, Placeholder: testPlaceholder, Name: "OPENAI_API_KEY"},
		{Host: "http://b.test:" + b.port(), Header: "Authorization", Format: "Bearer {}", Value: key, Placeholder: testPlaceholder, Name: "OPENAI_API_KEY"},
	}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"a.test", "b.test", "c.test"}, nil, "deny"), Resolver: loopback("a.test", "b.test", "c.test"), Credentials: creds})
	cl := h.unixClient(t, nil)
	for _, o := range []struct {
		host string
		o    *origin
	}{{"a.test", a}, {"b.test", b}} {
		u := "http://" + o.host + ":" + o.o.port() + "/v1/models"
		resp, body := do(t, cl, "GET", u, map[string]string{"Authorization": "Bearer " + testPlaceholder})
		mu.Lock()
		got := seen[o.host+":"+o.o.port()]
		mu.Unlock()
		if resp.StatusCode != http.StatusOK || body != "ok" || got != "Bearer "+key {
			t.Errorf("%s: %d %q, the origin saw Authorization %q, want the key", u, resp.StatusCode, body, got)
		}
	}
	resp, body := do(t, cl, "GET", "http://c.test:"+c.port()+"/v1/models", map[string]string{"Authorization": "Bearer " + testPlaceholder})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "placeholder of OPENAI_API_KEY") || strings.Contains(body, key) {
		t.Errorf("c.test: got %d %q, want 403 naming the placeholder", resp.StatusCode, body)
	}
	if n := c.hits.Load(); n != 0 {
		t.Errorf("the third origin was hit %d times", n)
	}
	// Without the placeholder, the third host gets no key either.
	do(t, cl, "GET", "http://c.test:"+c.port()+"/", nil)
	mu.Lock()
	defer mu.Unlock()
	if got := seen["c.test:"+c.port()]; got != "" {
		t.Errorf("c.test saw Authorization %q", got)
	}
}

// TestPlaceholderInBasic: git and curl send a password (a URL's, a credential
// helper's, an http.extraHeader's) as Basic, the base64 of user:password, where the
// placeholder is not written out. Toward the credential's host, in its own header,
// the proxy sets the value over it; anywhere else it is refused as the written-out
// placeholder is: toward another destination (the host's plain HTTP port, where git
// sends it once a server answers 401), and in another header toward its host.
func TestPlaceholderInBasic(t *testing.T) {
	creds, err := compileCredentials([]Credential{{Host: "git.test", Header: "Authorization", Format: "Basic {}",
		Value: base64.StdEncoding.EncodeToString([]byte("x-access-token:" + testToken)), Placeholder: testPlaceholder, Name: "GH_TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	basic := func(scheme, userpass string) string {
		return scheme + " " + base64.StdEncoding.EncodeToString([]byte(userpass))
	}
	for _, tc := range []struct {
		url, header, value string
		where              string // "" when applied
	}{
		{"https://git.test/repo.git/info/refs", "Authorization", basic("Basic", "x-access-token:"+testPlaceholder), ""},
		{"https://git.test/repo.git/info/refs", "Authorization", basic("basic", "me:"+testPlaceholder), ""},
		{"http://git.test:8000/repo.git/info/refs", "Authorization", basic("Basic", "x-access-token:"+testPlaceholder), "other"},
		{"http://git.test/repo.git/info/refs", "Authorization", basic("basic", "me:"+testPlaceholder), "other"},
		{"https://other.test/", "Proxy-Authorization", basic("BASIC", testPlaceholder+":"), "other"},
		{"https://git.test/", "X-Debug", basic("Basic", "x:"+testPlaceholder), "header X-Debug"},
		{"https://other.test/", "Authorization", basic("Basic", "x-access-token:not-the-placeholder"), ""},
	} {
		req := httptest.NewRequest("GET", tc.url, nil)
		req.Header.Set(tc.header, tc.value)
		port := map[string]int{"https": 443, "http": 80}[req.URL.Scheme]
		if p := req.URL.Port(); p != "" {
			port, _ = strconv.Atoi(p)
		}
		_, err := applyCredentials(creds, req, req.URL.Scheme, req.URL.Hostname(), port)
		var m *misplaced
		switch {
		case tc.where == "" && err != nil:
			t.Errorf("%s %s: %q: refused (%v), want it sent", tc.url, tc.header, tc.value, err)
		case tc.where == "":
		case !errors.As(err, &m):
			t.Errorf("%s %s: %q: %v, want it refused", tc.url, tc.header, tc.value, err)
		case tc.where == "other" && m.where != "", tc.where != "other" && m.where != tc.where:
			t.Errorf("%s %s: %q: refused naming %q, want %q", tc.url, tc.header, tc.value, m.where, tc.where)
		}
		if want := "Basic " + creds[0].Value; err == nil && req.URL.Scheme == "https" && req.URL.Host == "git.test" && req.Header.Get("Authorization") != want {
			t.Errorf("%s: Authorization %q, want the value", tc.url, req.Header.Get("Authorization"))
		}
	}
}

// TestPlaceholderInBodyGoesAsIs pins the decision on request bodies: a body is streamed
// unsearched, so a placeholder in it reaches the credential's host (or any allowed
// host) as written — never swapped for the value, which goes only in the credential's
// header. A refusal could only come after the headers and part of the body had gone
// (a torn request, not the clean 403 the header, path and query get before anything
// is sent), or by holding whole bodies back, and an encoded body (gzip, multipart,
// base64) would pass a search anyway; the placeholder carries no secret.
func TestPlaceholderInBodyGoesAsIs(t *testing.T) {
	type seenReq struct{ auth, body string }
	got := make(chan seenReq, 2)
	handler := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seenReq{r.Header.Get("Authorization"), string(b)}
		io.WriteString(w, "ok")
	}
	a, c := newOrigin(t, false, handler), newOrigin(t, false, handler)
	const key = "sk-body-0123456789abcdef"
	creds := []Credential{{Host: "http://a.test:" + a.port(), Header: "Authorization", Format: "Bearer {}", Value: key, Placeholder: testPlaceholder, Name: "OPENAI_API_KEY"}}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"a.test", "c.test"}, nil, "deny"), Resolver: loopback("a.test", "c.test"), Credentials: creds})
	cl := h.unixClient(t, nil)
	body := `{"api_key":"` + testPlaceholder + `"}`
	for _, u := range []string{"http://a.test:" + a.port() + "/v1/check", "http://c.test:" + c.port() + "/v1/check"} {
		req, err := http.NewRequest("POST", u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := <-got
		if resp.StatusCode != http.StatusOK || s.body != body || strings.Contains(s.body, key) {
			t.Errorf("POST %s: %d, the origin saw the body %q, want the placeholder as written and never the key", u, resp.StatusCode, s.body)
		}
		if wantAuth := map[bool]string{true: "Bearer " + key, false: ""}[strings.Contains(u, "a.test")]; s.auth != wantAuth {
			t.Errorf("POST %s: the origin saw Authorization %q, want %q", u, s.auth, wantAuth)
		}
	}
}
