package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// TestMalformedTargets: a wildcard, an unspecified address, an address with a zone or
// a name that is not one is refused with 400 before any policy or resolver sees it,
// logged as a bad request, and never suggested.
func TestMalformedTargets(t *testing.T) {
	res := &fakeResolver{names: map[string][]netip.Addr{}}
	h := newHarness(t, Config{Policy: mustPolicy(t, nil, nil, "deny"), Resolver: res})
	for _, line := range []string{
		"CONNECT *.com:443", "CONNECT 0.0.0.0:443", "CONNECT 0.1.2.3:443", "CONNECT [::]:443", "CONNECT [fe80::1%25en0]:443",
		"CONNECT 1.2.3:80", "CONNECT a_-.test:80",
		"GET http://*.com/", "GET http://0.0.0.0:8080/", "GET http://[::]/", "GET http://[fe80::1%25en0]/", "GET http://1.2.3/",
	} {
		c := h.dialUnix(t)
		fmt.Fprintf(c, "%s HTTP/1.1\r\nHost: x\r\n\r\n", line)
		resp, err := http.ReadResponse(newReader(c), &http.Request{Method: "GET"})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %q, want 400", line, resp.StatusCode, body)
		}
		c.Close()
	}
	h.shutdown(t)
	if n := res.calls.Load(); n != 0 {
		t.Errorf("%d lookups for malformed targets", n)
	}
	recs := records(t, h)
	for _, r := range recs {
		if r.Decision != audit.DecisionDeny || r.Rule != audit.RuleBadRequest || r.Status != 400 {
			t.Errorf("record %+v, want a bad request", r)
		}
	}
	if len(recs) != 12 {
		t.Errorf("%d records, want 12", len(recs))
	}
	if sugg, _ := audit.Suggest(recs); len(sugg) != 0 {
		t.Errorf("suggested %q", sugg)
	}
}

// TestHostLoopbackRefused: the unspecified addresses are never a destination, and
// under RefuseLoopback neither is the loopback, whatever allow entry names it: a
// literal, a name resolving there, localhost, a mapped or NAT64 form.
func TestHostLoopbackRefused(t *testing.T) {
	pol := mustPolicy(t, []string{"127.0.0.1", "::1", "0.0.0.0", "rebind.test", "localhost", "zero.test", "0.0.0.0/0"}, nil, "allow")
	res := loopback("rebind.test", "localhost")
	res.names["zero.test"] = []netip.Addr{netip.MustParseAddr("0.0.0.0")}
	for _, refuse := range []bool{false, true} {
		p := *pol
		p.RefuseLoopback = refuse
		rd := &recordingDial{}
		d := &Dialer{Policy: &p, Resolver: res, Dial: rd.dial}
		for _, target := range []string{"127.0.0.1:80", "[::1]:80", "rebind.test:80", "localhost:80", "[::ffff:127.0.0.1]:80", "[64:ff9b::7f00:1]:80", "zero.test:80", "0.0.0.0:80"} {
			_, err := d.DialContext(context.Background(), "tcp", target)
			var denied *DeniedError
			unspecified := target == "zero.test:80" || target == "0.0.0.0:80"
			switch {
			case refuse || unspecified:
				if !errors.As(err, &denied) || denied.Decision.Rule != audit.RuleHost {
					t.Errorf("refuse=%v %s: %v, want a host-loopback denial", refuse, target, err)
				}
			case errors.As(err, &denied) && denied.Decision.Rule == audit.RuleHost:
				t.Errorf("refuse=%v %s: %v; only the unspecified address is refused as the host's", refuse, target, err)
			}
		}
	}
}
