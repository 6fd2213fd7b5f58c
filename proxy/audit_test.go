package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

func TestAuditRecords(t *testing.T) {
	var leaked atomic.Value
	o := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Proxy-Authorization") + r.Header.Get("Proxy-Connection"))
		io.Copy(io.Discard, r.Body)
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "SEKRIT4"})
		io.WriteString(w, strings.Repeat("d", 5000))
	})
	echo := newCountingListener(t)
	h := newHarness(t, Config{
		Policy:   mustPolicy(t, []string{"origin.test", "echo.test"}, []string{"blocked.test"}, "allow"),
		Resolver: loopback("origin.test", "echo.test", "blocked.test"),
	})
	pu, _ := url.Parse(h.srv.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	c := &http.Client{Transport: tr}

	// 1: allowed, with a body, secrets in the query, Authorization and Cookie.
	req, _ := http.NewRequest("POST", "http://origin.test:"+o.port()+"/upload?token=SEKRIT1", strings.NewReader(strings.Repeat("u", 1000)))
	req.Header.Set("Authorization", "Bearer SEKRIT2")
	req.Header.Set("Cookie", "c=SEKRIT3")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if v, _ := leaked.Load().(string); v != "" {
		t.Errorf("the origin saw proxy headers: %q", v)
	}
	// 2: denied by a deny entry.
	if code, _ := get(t, c, "http://blocked.test:"+o.port()+"/x?token=SEKRIT5"); code != 403 {
		t.Fatalf("blocked: %d", code)
	}
	tr.CloseIdleConnections()
	// 3: no credential.
	noauth := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: h.tcp})}}
	if code, _ := get(t, noauth, "http://origin.test:"+o.port()+"/"); code != 407 {
		t.Fatalf("no credential: %d", code)
	}
	noauth.CloseIdleConnections()
	// 4: a tunnel moving 10 bytes each way.
	conn := h.dialUnix(t)
	_, _, br := rawConnect(t, conn, "echo.test:"+echo.port())
	io.WriteString(conn, "0123456789")
	io.ReadFull(br, make([]byte, 10))
	conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.ReadLog(h.logDir, audit.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	for i := range recs {
		if recs[i].Time.IsZero() || recs[i].DurationMS < 0 {
			t.Errorf("record %d: time %v, duration %d", i, recs[i].Time, recs[i].DurationMS)
		}
		recs[i].Time, recs[i].DurationMS = time.Time{}, 0
	}
	op, ep := atoi(o.port()), atoi(echo.port())
	want := []audit.Record{
		{Kind: audit.KindRequest, Session: "sess-1", Method: "POST", Host: "origin.test", Port: op, Path: "/upload", Status: 200,
			BytesUp: 1000, BytesDown: 5000, Decision: audit.DecisionAllow, Rule: "origin.test"},
		{Kind: audit.KindRequest, Session: "sess-1", Method: "GET", Host: "blocked.test", Port: op, Path: "/x", Status: 403,
			Decision: audit.DecisionDeny, Rule: "blocked.test", Reason: "it matches a deny entry"},
		{Kind: audit.KindRequest, Session: "sess-1", Method: "GET", Host: "origin.test", Port: op, Path: "/", Status: 407,
			Decision: audit.DecisionDeny, Rule: audit.RuleAuth, Reason: "missing or wrong proxy credential"},
		{Kind: audit.KindRequest, Session: "sess-1", Method: "CONNECT", Host: "echo.test", Port: ep, Status: 200,
			BytesUp: 10, BytesDown: 10, Decision: audit.DecisionAllow, Rule: "echo.test"},
	}
	if !slices.Equal(recs, want) {
		t.Errorf("records:\n%+v\nwant\n%+v", recs, want)
	}
	raw, _ := os.ReadFile(h.logFile(t))
	for _, secret := range []string{"SEKRIT", "token", "authorization", "cookie", h.srv.secret} {
		if strings.Contains(strings.ToLower(string(raw)), strings.ToLower(secret)) {
			t.Errorf("the log holds %q:\n%s", secret, raw)
		}
	}
	fi, _ := os.Stat(h.logFile(t))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func TestUnusedConnIsNotARecord(t *testing.T) {
	h := newHarness(t, Config{})
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	h.srv.Shutdown(context.Background())
	if recs, _ := audit.ReadLog(h.logDir, audit.LogFilter{}); len(recs) != 0 {
		t.Errorf("records for a silent connection: %+v", recs)
	}
}

// TestSuggestionsAreEntries: what audit.Suggest proposes is an entry the policy accepts.
func TestSuggestionsAreEntries(t *testing.T) {
	deny := func(host string, port int, rule, special string) audit.Record {
		return audit.Record{Host: host, Port: port, Decision: audit.DecisionDeny, Rule: rule, Special: special}
	}
	recs := []audit.Record{
		deny("a.example.com", 80, audit.RuleDefault, ""),
		deny("api.test", 8443, audit.RuleDefault, ""),
		deny("nas.lan.", 443, audit.RulePrivate, audit.ClassPrivate),
		deny("10.0.0.5", 22, audit.RulePrivate, audit.ClassPrivate),
		deny("2001:db8::1", 8080, audit.RuleDefault, ""),
		deny("[2001:db8::2]", 443, audit.RuleDefault, ""),
	}
	got, held := audit.Suggest(recs)
	if len(got) != len(recs) || len(held) != 0 {
		t.Fatalf("Suggest = %q, withheld %q", got, held)
	}
	for _, s := range got {
		if _, err := parseEntry(s.Entry); err != nil {
			t.Errorf("suggested %q is not an entry: %v", s.Entry, err)
		}
	}
}

// TestAuditStream: with LogTo and no LogDir, the records go to the stream as lines a
// host's audit.Writer relays, the session's own.
func TestAuditStream(t *testing.T) {
	var out strings.Builder
	srv, err := New(Config{Policy: mustPolicy(t, nil, nil, "deny"), Session: "sess-s", LogTo: &out, Resolver: loopback("denied.test")})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "p.sock")
	if err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: srv, sock: sock}
	c := h.unixClient(t, nil)
	if code, _ := get(t, c, "http://denied.test:81/"); code != 403 {
		t.Fatalf("denied: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := audit.Open(dir, "sess-s", audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Relay(strings.NewReader(out.String())); err != nil {
		t.Fatalf("relaying %q: %v", out.String(), err)
	}
	w.Close()
	recs, err := audit.ReadLog(dir, audit.LogFilter{})
	if err != nil || len(recs) != 1 || recs[0].Host != "denied.test" || recs[0].Decision != audit.DecisionDeny || recs[0].Session != "sess-s" {
		t.Errorf("relayed records: %+v, %v (stream %q)", recs, err, out.String())
	}
}
