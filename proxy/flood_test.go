package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// TestAuditFlood is the attack on the audit log: an allowed request carrying a marker,
// then denied requests with 60,000-byte paths on one keep-alive connection. The marker
// and an earlier session's record survive; denied records beyond the session's budget
// are counted, not written; every record is bounded.
func TestAuditFlood(t *testing.T) {
	o := newOrigin(t, false, hello)
	pol := mustPolicy(t, []string{"origin.test"}, nil, "deny")
	res := loopback("origin.test", "denied.test")
	early := newHarness(t, Config{Policy: pol, Resolver: res, Session: "early"})
	if code, _ := get(t, early.unixClient(t, nil), "http://origin.test:"+o.port()+"/early"); code != 200 {
		t.Fatalf("early: %d", code)
	}
	early.shutdown(t)

	h := newHarness(t, Config{Policy: pol, Resolver: res, Session: "flood", LogDir: early.logDir})
	c := h.dialUnix(t)
	br := bufio.NewReader(c)
	send := func(url string) int {
		t.Helper()
		// A bound on one round trip, not on the whole flood: 1,500 requests of 60 kB
		// take about 1.3 s here, and over 10 s under the race detector.
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", url)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("http://origin.test:" + o.port() + "/marker"); code != 200 {
		t.Fatalf("marker: %d", code)
	}
	long := "/" + strings.Repeat("A", 60000)
	const flood = 1500
	for i := range flood {
		if code := send("http://denied.test:9" + long); code != 403 {
			t.Fatalf("flood request %d: %d", i, code)
		}
	}
	h.shutdown(t)

	recs, err := audit.ReadLog(h.logDir, audit.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	denied, dropped := 0, 0
	for _, r := range recs {
		switch {
		case r.Kind == audit.KindDropped:
			dropped += r.Dropped
		case r.Decision == audit.DecisionDeny:
			denied++
			if len(r.Path) > audit.MaxPathBytes || r.PathBytes != len(long) {
				t.Fatalf("a flood record keeps %d bytes of its path and says it had %d", len(r.Path), r.PathBytes)
			}
		case r.Decision == audit.DecisionAllow:
			allowed = append(allowed, r.Session+" "+r.Path)
		}
	}
	if want := []string{"early /early", "flood /marker"}; !slices.Equal(allowed, want) {
		t.Errorf("allowed records after the flood: %q, want %q", allowed, want)
	}
	if denied != audit.DefaultDeniedBudget || dropped != flood-audit.DefaultDeniedBudget {
		t.Errorf("%d denied records written, %d dropped; want %d and %d", denied, dropped, audit.DefaultDeniedBudget, flood-audit.DefaultDeniedBudget)
	}
}
