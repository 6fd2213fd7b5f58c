package planner

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/tools"
)

// TestAllowlistNameOpensNoMetadataAddress: in allowlist mode a host-name entry is
// resolved at launch and its addresses become firewall accepts, reached directly.
// The name may be one the sandbox chose (a line `logs proxy --suggest` proposed), and
// whoever serves its DNS chooses the addresses: a name that resolves to a metadata,
// link-local or multicast address must fail the launch, naming the name, the address
// and the fix (the address as an entry, if that is meant), as the proxy refuses such a
// name (proxy.addressOnly). Before, the firewall accepted 169.254.169.254 for it.
func TestAllowlistNameOpensNoMetadataAddress(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"169.254.169.254", false},
		{"fd00:ec2::254", false},
		{"168.63.129.16", false},
		{"169.254.7.7", false},
		{"fe80::1", false},
		{"224.0.0.251", false},
		{"93.184.216.34", true},
		{"10.1.2.3", true}, // a LAN service by its name, as the proxy allows it
	} {
		t.Run(tc.addr, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.load(t)
			cfg.Egress.Mode, cfg.Egress.Allow = "allowlist", []string{"cdn.attacker.test"}
			pr := probe(f.proj)
			pr.SocketDir = fixedSocketDir("/run/user/1000/devsandbox/id")
			pr.LookupIP = func(host string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr(tc.addr)}, nil
			}
			p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s1"})
			if tc.ok {
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				return
			}
			if err == nil {
				fw, cerr := egress.Compile(p.Egress)
				t.Fatalf("the launch went ahead with cdn.attacker.test resolving to %s; the firewall: %+v (%v)", tc.addr, fw.Matches, cerr)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "cdn.attacker.test") || !strings.Contains(err.Error(), tc.addr) {
				t.Errorf("err = %v; want an ErrConfig naming cdn.attacker.test and %s", err, tc.addr)
			}
		})
	}
}
