package proxy

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// TestSuggestedNameOpensNoHostOrMetadataAddress: under proxy.default = "deny" a name
// the sandbox asks for is refused before it is resolved, so `logs proxy --suggest`
// proposes it as a plain entry, with no warning. The sandbox chose the name, and
// whoever serves its DNS chooses its addresses: once the line is pasted, the entry
// must not open the cloud's metadata service, a link-local or multicast address or
// the proxy host's own addresses through it — only an IP or CIDR entry names those.
// Before, an exact name entry named every special-purpose address it resolved to,
// and the dialer connected to 169.254.169.254.
func TestSuggestedNameOpensNoHostOrMetadataAddress(t *testing.T) {
	const name = "cdn.attacker.test"
	denied := audit.Record{Method: "CONNECT", Host: name, Port: 443, Decision: audit.DecisionDeny, Rule: audit.RuleDefault,
		Reason: "no allow entry matches and the proxy default is deny"}
	sugg, held := audit.Suggest([]audit.Record{denied})
	if len(sugg) != 1 || len(held) != 0 || sugg[0].Warning != "" {
		t.Fatalf("Suggest = %+v, held %+v; want one entry without a warning", sugg, held)
	}
	pasted := []string{sugg[0].Entry}
	// The proxy host's own interfaces: a public address, and the LAN and bridge ones
	// most hosts have (a laptop's 192.168.x.y, docker0's 172.17.0.1, a ULA): the host's
	// services bound to 0.0.0.0 listen on each.
	hostAddrs := []netip.Addr{netip.MustParseAddr("93.184.216.99"), netip.MustParseAddr("192.168.1.5"),
		netip.MustParseAddr("172.17.0.1"), netip.MustParseAddr("fd00::2")}
	for _, tc := range []struct {
		addr  string
		class string // "": dialled
	}{
		{"169.254.169.254", audit.ClassMetadata},
		{"fd00:ec2::254", audit.ClassMetadata},
		{"168.63.129.16", audit.ClassMetadata},
		{"169.254.1.1", audit.ClassLinkLocal},
		{"fe80::1", audit.ClassLinkLocal},
		{"224.0.0.251", audit.ClassMulticast},
		{"93.184.216.99", audit.ClassThisHost},
		{"192.168.1.5", audit.ClassThisHost},
		{"172.17.0.1", audit.ClassThisHost},
		{"fd00::2", audit.ClassThisHost},
		{"93.184.216.34", ""}, // a public address: what the entry is for
		{"10.1.2.3", ""},      // a LAN address: an exact name names it (an intranet service)
	} {
		t.Run(tc.addr, func(t *testing.T) {
			pol := mustPolicy(t, pasted, nil, "deny")
			pol.IsLocal = func(a netip.Addr) bool { return slices.Contains(hostAddrs, a) }
			rd := &recordingDial{}
			res := &fakeResolver{names: map[string][]netip.Addr{name: {netip.MustParseAddr(tc.addr)}}}
			d := &Dialer{Policy: pol, Resolver: res, Dial: rd.dial}
			_, err := d.DialContext(context.Background(), "tcp", name+":443")
			if tc.class == "" {
				if !errors.Is(err, errNoDial) || len(rd.addrs) != 1 {
					t.Fatalf("err = %v, dialled %v; want %s dialled", err, rd.addrs, tc.addr)
				}
				return
			}
			var de *DeniedError
			if !errors.As(err, &de) || de.Decision.Rule != audit.RulePrivate || de.Decision.Special != tc.class || !slices.Equal(rd.addrs, nil) {
				t.Fatalf("the pasted entry %q let %s resolving to %s through: err = %v, dialled %v; want a %s denial and no dial",
					pasted[0], name, tc.addr, err, rd.addrs, tc.class)
			}
		})
	}
}

// TestSuggestedEntryOpensOnlyTheAskedPort: a denied request to name:443 (or :80)
// comes back from `logs proxy --suggest` as an entry that, pasted, opens that port of
// that name and no other: a bare name opens every port (egress.Entry's Port 0), so the
// sandbox's ssh, database or admin port on the same host stays denied. Before, the
// suggestion for 80 and 443 was the bare name.
func TestSuggestedEntryOpensOnlyTheAskedPort(t *testing.T) {
	const name = "cdn.example.test"
	public := []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	for _, asked := range []int{443, 80, 8443} {
		denied := audit.Record{Method: "CONNECT", Host: name, Port: asked, Decision: audit.DecisionDeny, Rule: audit.RuleDefault}
		sugg, _ := audit.Suggest([]audit.Record{denied})
		if len(sugg) != 1 {
			t.Fatalf("Suggest(%s:%d) = %+v; want one entry", name, asked, sugg)
		}
		pol := mustPolicy(t, []string{sugg[0].Entry}, nil, "deny")
		for _, port := range []int{asked, 22, 5432, 80, 443} {
			if d := pol.Decide(name, port, public); d.Allow != (port == asked) {
				t.Errorf("the pasted entry %q, for a request to port %d: port %d allowed %v (%s), want %v",
					sugg[0].Entry, asked, port, d.Allow, d.Reason, port == asked)
			}
		}
	}
}
