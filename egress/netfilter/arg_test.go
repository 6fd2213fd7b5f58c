package netfilter

import (
	"encoding/base64"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
)

func TestArgRoundTrip(t *testing.T) {
	fw := egress.Firewall{
		Matches: []egress.Match{
			{Verdict: egress.Drop, Dst: netip.MustParsePrefix("198.51.100.0/24"), Why: "deny 198.51.100.0/24"},
			{Verdict: egress.Accept, Dst: netip.MustParsePrefix("192.0.2.10/32"), Port: 443, Why: `allow "quoted" ünïcode`},
			{Verdict: egress.Accept, Dst: netip.MustParsePrefix("2001:db8::/32"), Port: 8080, Why: "allow [2001:db8::/32]:8080"},
		},
		V4: true, V6: true,
	}
	for _, f := range []egress.Firewall{fw, {}} {
		arg, err := EncodeArg(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(arg, FirewallArg) || strings.ContainsAny(arg[len(FirewallArg):], "+/= \n") {
			t.Fatalf("EncodeArg = %q: not %s and base64url without padding", arg, FirewallArg)
		}
		got, err := DecodeArg(arg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", got, f)
		}
	}
}

func TestDecodeArgRejects(t *testing.T) {
	enc := func(js string) string { return FirewallArg + base64.RawURLEncoding.EncodeToString([]byte(js)) }
	for _, tc := range []struct{ name, arg, want string }{
		{"no prefix", "--forward=x", "does not start with --firewall="},
		{"not base64url", FirewallArg + "a+b/", "decoding the firewall argument"},
		{"padded", enc("{}") + "=", "decoding the firewall argument"},
		{"not JSON", enc("nope"), "decoding the firewall argument"},
		{"unknown field", enc(`{"Matches":[],"Extra":1}`), "unknown field"},
		{"trailing data", enc(`{}{}`), "data after the firewall"},
		{"bad prefix", enc(`{"Matches":[{"Dst":"192.0.2.300/32"}]}`), "decoding the firewall argument"},
		{"no destination", enc(`{"Matches":[{"Verdict":0,"Why":"x"}]}`), "has no destination"},
		{"unknown verdict", enc(`{"Matches":[{"Verdict":7,"Dst":"192.0.2.1/32"}]}`), "unknown verdict 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeArg(tc.arg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeArg(%q) = %v, want an error with %q", tc.arg, err, tc.want)
			}
		})
	}
}

func TestEncodeArgLimits(t *testing.T) {
	if _, err := EncodeArg(egress.Firewall{Matches: []egress.Match{{Verdict: egress.Accept}}}); err == nil {
		t.Fatal("a match without a destination encoded")
	}
	var fw egress.Firewall
	for range 2000 {
		fw.Matches = append(fw.Matches, egress.Match{Dst: netip.MustParsePrefix("2001:db8::1/128"), Port: 443, Why: "allow [2001:db8::1]:443"})
	}
	if _, err := EncodeArg(fw); err == nil || !strings.Contains(err.Error(), "too many rules (2000)") {
		t.Fatalf("EncodeArg of 2000 matches: %v", err)
	}
}
