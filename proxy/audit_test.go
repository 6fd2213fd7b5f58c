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
	recs, err := ReadLog(h.logDir, LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b Record) int { return a.Time.Compare(b.Time) })
	for i := range recs {
		if recs[i].Time.IsZero() || recs[i].DurationMS < 0 {
			t.Errorf("record %d: time %v, duration %d", i, recs[i].Time, recs[i].DurationMS)
		}
		recs[i].Time, recs[i].DurationMS = time.Time{}, 0
	}
	op, ep := atoi(o.port()), atoi(echo.port())
	want := []Record{
		{Session: "sess-1", Method: "POST", Host: "origin.test", Port: op, Path: "/upload", Status: 200,
			BytesUp: 1000, BytesDown: 5000, Decision: DecisionAllow, Rule: "origin.test"},
		{Session: "sess-1", Method: "GET", Host: "blocked.test", Port: op, Path: "/x", Status: 403,
			Decision: DecisionDeny, Rule: "blocked.test", Reason: "it matches a deny entry"},
		{Session: "sess-1", Method: "GET", Host: "origin.test", Port: op, Path: "/", Status: 407,
			Decision: DecisionDeny, Rule: RuleAuth, Reason: "missing or wrong proxy credential"},
		{Session: "sess-1", Method: "CONNECT", Host: "echo.test", Port: ep, Status: 200,
			BytesUp: 10, BytesDown: 10, Decision: DecisionAllow, Rule: "echo.test"},
	}
	if !slices.Equal(recs, want) {
		t.Errorf("records:\n%+v\nwant\n%+v", recs, want)
	}
	raw, _ := os.ReadFile(filepath.Join(h.logDir, LogFile))
	for _, secret := range []string{"SEKRIT", "token", "authorization", "cookie", h.srv.secret} {
		if strings.Contains(strings.ToLower(string(raw)), strings.ToLower(secret)) {
			t.Errorf("the log holds %q:\n%s", secret, raw)
		}
	}
	fi, _ := os.Stat(filepath.Join(h.logDir, LogFile))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func seqRecord(i int) Record {
	return Record{Time: time.Unix(int64(i), 0).UTC(), Method: "GET", Host: fmt.Sprintf("h%02d.test", i), Port: 80, Decision: DecisionAllow}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := openAuditLog(dir, 400, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := l.write(seqRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	for i, name := range []string{LogFile, LogFile + ".1", LogFile + ".2", LogFile + ".3"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() > 400 || fi.Size() == 0 {
			t.Errorf("file %d: %v, %v", i, fi, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile+".4")); err == nil {
		t.Error("a fourth rotated file was kept")
	}
	recs, err := ReadLog(dir, LogFilter{})
	if err != nil || len(recs) == 0 {
		t.Fatal(recs, err)
	}
	first := 30 - len(recs)
	for i, r := range recs {
		if r != seqRecord(first+i) {
			t.Fatalf("record %d = %+v, want %+v", i, r, seqRecord(first+i))
		}
	}
	if first == 0 {
		t.Error("nothing was dropped by rotation")
	}
}

func TestReadLogFilterAndMissing(t *testing.T) {
	recs, err := ReadLog(filepath.Join(t.TempDir(), "none"), LogFilter{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("missing log: %v, %v", recs, err)
	}
	dir := t.TempDir()
	l, _ := openAuditLog(dir, 1<<20, 3)
	all := []Record{
		{Time: time.Unix(1, 0).UTC(), Session: "a", Host: "x.test", Decision: DecisionAllow},
		{Time: time.Unix(2, 0).UTC(), Session: "a", Host: "y.test", Decision: DecisionDeny},
		{Time: time.Unix(3, 0).UTC(), Session: "b", Host: "Y.test", Decision: DecisionDeny},
	}
	for _, r := range all {
		l.write(r)
	}
	l.f.WriteString(`{"time": "cut short`) // a torn last line is skipped
	l.close()
	tests := []struct {
		f    LogFilter
		want []Record
	}{
		{LogFilter{}, all},
		{LogFilter{Denied: true}, all[1:]},
		{LogFilter{Session: "a"}, all[:2]},
		{LogFilter{Host: "y.test"}, all[1:]},
		{LogFilter{Since: time.Unix(3, 0)}, all[2:]},
	}
	for _, tt := range tests {
		got, err := ReadLog(dir, tt.f)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ReadLog(%+v) = %v, %v; want %v", tt.f, got, err, tt.want)
		}
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	l, _ := openAuditLog(dir, 300, 3)
	l.write(seqRecord(0))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Record, 100)
	done := make(chan error)
	go func() { done <- Follow(ctx, dir, LogFilter{}, func(r Record) { got <- r }) }()
	expect := func(i int) {
		t.Helper()
		select {
		case r := <-got:
			if r != seqRecord(i) {
				t.Fatalf("got %+v, want %+v", r, seqRecord(i))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("record %d never came", i)
		}
	}
	expect(0)
	for i := 1; i < 16; i += 5 { // several rotations between two polls
		for j := range 5 {
			l.write(seqRecord(i + j))
		}
		for j := range 5 {
			expect(i + j)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.close()
}

func TestSuggest(t *testing.T) {
	deny := func(host string, port int, rule string) Record {
		return Record{Host: host, Port: port, Decision: DecisionDeny, Rule: rule}
	}
	recs := []Record{
		deny("b.example.com", 443, RuleDefault),
		deny("a.example.com", 80, RuleDefault),
		deny("b.example.com", 443, RuleDefault),
		deny("api.test", 8443, RuleDefault),
		deny("nas.lan", 443, RulePrivate),
		deny("10.0.0.5", 22, RulePrivate),
		deny("2001:db8::1", 8080, RuleDefault),
		deny("2001:db8::2", 443, RuleDefault),
		deny("evil.test", 443, "evil.test"), // a deny entry: no allow entry helps
		deny("x.test", 80, RuleAuth),
		{Host: "ok.test", Port: 443, Decision: DecisionAllow, Rule: RuleDefault},
	}
	want := []string{"10.0.0.5:22", "2001:db8::2", "[2001:db8::1]:8080", "a.example.com", "api.test:8443", "b.example.com", "nas.lan"}
	if got := Suggest(recs); !slices.Equal(got, want) {
		t.Errorf("Suggest = %q\nwant %q", got, want)
	}
	for _, e := range want {
		if _, err := parseEntry(e); err != nil {
			t.Errorf("suggested %q is not an entry: %v", e, err)
		}
	}
}

func TestUnusedConnIsNotARecord(t *testing.T) {
	h := newHarness(t, Config{})
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	h.srv.Shutdown(context.Background())
	if recs, _ := ReadLog(h.logDir, LogFilter{}); len(recs) != 0 {
		t.Errorf("records for a silent connection: %+v", recs)
	}
}
