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

// TestAllowlistNameOpensNoHostAddress: an allowed name that resolves at launch to one
// of this host's interface addresses — public, or the LAN, bridge and ULA ones most
// hosts have — fails the launch as a metadata one does: the firewall would let the
// sandbox reach the host's services bound to 0.0.0.0 by the name's DNS's choice. The
// proxy refuses such a name (Policy.IsLocal, by the same hostaddr.Read); the planner
// accepted it. A denied name, an address entry and another LAN host go ahead.
func TestAllowlistNameOpensNoHostAddress(t *testing.T) {
	host := []netip.Addr{netip.MustParseAddr("93.184.216.99"), netip.MustParseAddr("192.168.1.5"),
		netip.MustParseAddr("172.17.0.1"), netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fe80::42:1%docker0")}
	for _, tc := range []struct {
		allow, deny []string
		addr        string
		ok          bool
	}{
		{allow: []string{"cdn.attacker.test"}, addr: "93.184.216.99"},
		{allow: []string{"cdn.attacker.test:443"}, addr: "192.168.1.5"},
		{allow: []string{"cdn.attacker.test"}, addr: "172.17.0.1"},
		{allow: []string{"cdn.attacker.test"}, addr: "fd00::2"},
		{allow: []string{"cdn.attacker.test"}, addr: "::ffff:192.168.1.5"},
		{allow: []string{"cdn.attacker.test"}, addr: "64:ff9b::5db8:d863"},                   // NAT64 of 93.184.216.99
		{allow: []string{"cdn.attacker.test"}, addr: "2002:5db8:d863::1"},                    // 6to4 of 93.184.216.99
		{allow: []string{"cdn.attacker.test"}, addr: "2001:0:4136:e378:8000:63bf:a247:279c"}, // Teredo, 93.184.216.99 the client
		{allow: []string{"cdn.attacker.test"}, addr: "::c0a8:105"},                           // IPv4-compatible 192.168.1.5
		{allow: []string{"cdn.attacker.test"}, addr: "2002:5db8:d864::1", ok: true},          // 6to4 of another host
		{allow: []string{"cdn.attacker.test"}, addr: "fe80::42:1"},
		{allow: []string{"cdn.attacker.test"}, addr: "192.168.1.6", ok: true}, // another LAN host
		{allow: []string{"cdn.attacker.test"}, addr: "93.184.216.34", ok: true},
		{allow: []string{"192.168.1.5"}, deny: []string{"cdn.attacker.test"}, addr: "192.168.1.5", ok: true}, // denied, and the address entry
	} {
		t.Run(tc.addr, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.load(t)
			cfg.Egress.Mode, cfg.Egress.Allow, cfg.Egress.Deny = "allowlist", tc.allow, tc.deny
			pr := probe(f.proj)
			pr.SocketDir = fixedSocketDir("/run/user/1000/devsandbox/id")
			pr.LookupIP = func(string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr(tc.addr)}, nil }
			pr.HostAddrs = func() ([]netip.Addr, error) { return host, nil }
			p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s1"})
			if tc.ok {
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				return
			}
			if err == nil {
				fw, cerr := egress.Compile(p.Egress)
				t.Fatalf("the launch went ahead with cdn.attacker.test resolving to %s, this host's; the firewall: %+v (%v)", tc.addr, fw.Matches, cerr)
			}
			want := "egress allowlist: cdn.attacker.test resolves to " + netip.MustParseAddr(tc.addr).Unmap().String() +
				", an address of this host, which only an IP or CIDR entry opens (a name's addresses are its DNS's choice); add the address as an entry if you mean to reach it"
			if !errors.Is(err, ErrConfig) || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("err = %v\nwant an ErrConfig ending %q", err, want)
			}
		})
	}
}

// TestAllowlistHostAddrsFailClosed: when this host's addresses cannot be listed, an
// allowed name cannot be checked against them, and the launch stops saying so; with
// no name allowed they are not read at all.
func TestAllowlistHostAddrsFailClosed(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		ok    bool
	}{{[]string{"cdn.attacker.test"}, false}, {[]string{"93.184.216.34"}, true}} {
		f := newFixture(t)
		cfg := f.load(t)
		cfg.Egress.Mode, cfg.Egress.Allow = "allowlist", tc.allow
		pr := probe(f.proj)
		pr.SocketDir = fixedSocketDir("/run/user/1000/devsandbox/id")
		pr.LookupIP = func(string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil }
		read := errors.New("netlink: operation not permitted")
		pr.HostAddrs = func() ([]netip.Addr, error) { return nil, read }
		_, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s1"})
		if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, read) || !strings.Contains(err.Error(), "cdn.attacker.test")) {
			t.Errorf("allow %q: err = %v; want ok %v (else the read error, naming the name)", tc.allow, err, tc.ok)
		}
	}
}
