package proxy

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// The proxy reads entries with egress.ParseEntry only; its errors carry the proxy's
// class.
func TestParseEntry(t *testing.T) {
	for _, s := range []string{"example.com", "*.example.com:8080", "EXAMPLE.com.", "10.0.0.0/8:443", "[2001:db8::/32]:443"} {
		if _, err := parseEntry(s); err != nil {
			t.Errorf("parseEntry(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "*", "host:0", "[10.0.0.1]:80", "https://example.com"} {
		if _, err := parseEntry(s); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("parseEntry(%q) = %v, want ErrInvalidEntry", s, err)
		}
	}
}

// A rule is reported in the grammar's own form: what `logs proxy --suggest` prints
// and egress.allow reads.
func TestRuleText(t *testing.T) {
	p := mustPolicy(t, []string{"EXAMPLE.com.", "10.1.2.3/8", "[2001:db8::1]:443"}, nil, "deny")
	for _, tc := range []struct {
		host string
		port int
		addr []netip.Addr
		rule string
	}{
		{"example.com", 80, addrs("93.184.216.34"), "example.com"},
		{"10.9.9.9", 22, nil, "10.0.0.0/8"},
		{"2001:db8::1", 443, nil, "[2001:db8::1]:443"},
	} {
		if d := p.Decide(tc.host, tc.port, tc.addr); !d.Allow || d.Rule != tc.rule {
			t.Errorf("Decide(%s:%d) = %+v, want allowed by %q", tc.host, tc.port, d, tc.rule)
		}
	}
}

func TestNewPolicyDefault(t *testing.T) {
	for _, def := range []string{"", "allow", "deny"} {
		if _, err := NewPolicy(nil, nil, def); err != nil {
			t.Errorf("default %q: %v", def, err)
		}
	}
	if _, err := NewPolicy(nil, nil, "maybe"); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("default maybe: %v", err)
	}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestDecide(t *testing.T) {
	pub := addrs("93.184.216.34")
	pub6 := addrs("2606:2800:220:1::1")
	tests := []struct {
		name        string
		allow, deny []string
		def         string
		host        string
		port        int
		addrs       []netip.Addr
		want        Decision
	}{
		{"default allow", nil, nil, "allow", "example.com", 443, pub,
			Decision{Allow: true, Rule: audit.RuleDefault, Reason: "the proxy default is allow", Special: ""}},
		{"default deny", nil, nil, "deny", "example.com", 443, pub,
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"exact host", []string{"example.com"}, nil, "deny", "EXAMPLE.com.", 443, pub,
			Decision{Allow: true, Rule: "example.com", Reason: "it matches an allow entry", Special: ""}},
		{"exact host is not a subdomain", []string{"example.com"}, nil, "deny", "a.example.com", 443, pub,
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"wildcard subdomain", []string{"*.example.com"}, nil, "deny", "a.b.example.com", 443, pub,
			Decision{Allow: true, Rule: "*.example.com", Reason: "it matches an allow entry", Special: ""}},
		{"wildcard not apex", []string{"*.example.com"}, nil, "deny", "example.com", 443, pub,
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"wildcard not suffix of label", []string{"*.example.com"}, nil, "deny", "badexample.com", 443, pub,
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"port matches", []string{"example.com:8443"}, nil, "deny", "example.com", 8443, pub,
			Decision{Allow: true, Rule: "example.com:8443", Reason: "it matches an allow entry", Special: ""}},
		{"port differs", []string{"example.com:8443"}, nil, "deny", "example.com", 443, pub,
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"deny wins over allow", []string{"*.example.com"}, []string{"bad.example.com"}, "allow", "bad.example.com", 443, pub,
			Decision{Allow: false, Rule: "bad.example.com", Reason: "it matches a deny entry", Special: ""}},
		{"deny with port only that port", nil, []string{"example.com:22"}, "allow", "example.com", 443, pub,
			Decision{Allow: true, Rule: audit.RuleDefault, Reason: "the proxy default is allow", Special: ""}},
		{"deny wildcard", nil, []string{"*.evil.test"}, "allow", "x.evil.test", 80, pub,
			Decision{Allow: false, Rule: "*.evil.test", Reason: "it matches a deny entry", Special: ""}},
		{"cidr v4 allows resolved name", []string{"93.184.0.0/16"}, nil, "deny", "example.com", 443, pub,
			Decision{Allow: true, Rule: "93.184.0.0/16", Reason: "it matches an allow entry", Special: ""}},
		{"cidr allow needs every address", []string{"93.184.0.0/16"}, nil, "deny", "example.com", 443, addrs("93.184.216.34", "8.8.8.8"),
			Decision{Allow: false, Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny", Special: ""}},
		{"cidr deny on any address", nil, []string{"8.8.8.0/24"}, "allow", "example.com", 443, addrs("93.184.216.34", "8.8.8.8"),
			Decision{Allow: false, Rule: "8.8.8.0/24", Reason: "it matches a deny entry", Special: ""}},
		{"ip literal allow", []string{"93.184.216.34:443"}, nil, "deny", "93.184.216.34", 443, nil,
			Decision{Allow: true, Rule: "93.184.216.34:443", Reason: "it matches an allow entry", Special: ""}},
		{"cidr v6", []string{"2606:2800::/32"}, nil, "deny", "example.com", 443, pub6,
			Decision{Allow: true, Rule: "2606:2800::/32", Reason: "it matches an allow entry", Special: ""}},
		{"bracketed v6 with port", []string{"[2606:2800:220:1::1]:443"}, nil, "deny", "2606:2800:220:1::1", 443, nil,
			Decision{Allow: true, Rule: "[2606:2800:220:1::1]:443", Reason: "it matches an allow entry", Special: ""}},
		{"v6 deny cidr", nil, []string{"2606:2800::/32"}, "allow", "[2606:2800:220:1::1]", 443, nil,
			Decision{Allow: false, Rule: "2606:2800::/32", Reason: "it matches a deny entry", Special: ""}},
		{"mapped v4 address unmapped", []string{"93.184.216.0/24"}, nil, "deny", "example.com", 443, addrs("::ffff:93.184.216.34"),
			Decision{Allow: true, Rule: "93.184.216.0/24", Reason: "it matches an allow entry", Special: ""}},

		// special-purpose addresses
		{"rebinding to loopback", nil, nil, "allow", "rebind.test", 80, addrs("127.0.0.1"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "rebind.test resolves to 127.0.0.1, a loopback address", Special: audit.ClassLoopback}},
		{"loopback literal", nil, nil, "allow", "127.0.0.1", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "127.0.0.1 is a loopback address", Special: audit.ClassLoopback}},
		{"mapped loopback", nil, nil, "allow", "::ffff:127.0.0.1", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "::ffff:127.0.0.1 is a loopback address", Special: audit.ClassLoopback}},
		{"rfc1918", nil, nil, "allow", "nas.lan", 443, addrs("192.168.1.10"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "nas.lan resolves to 192.168.1.10, a private address", Special: audit.ClassPrivate}},
		{"ula", nil, nil, "allow", "fd12::1", 443, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "fd12::1 is a private address", Special: audit.ClassPrivate}},
		{"cgnat", nil, nil, "allow", "100.100.1.1", 443, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "100.100.1.1 is a carrier-grade NAT address", Special: audit.ClassCGNAT}},
		{"link-local v6", nil, nil, "allow", "fe80::1", 443, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "fe80::1 is a link-local address", Special: audit.ClassLinkLocal}},
		{"metadata v4", nil, nil, "allow", "169.254.169.254", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "169.254.169.254 is a cloud metadata address", Special: audit.ClassMetadata}},
		{"metadata v6", nil, nil, "allow", "fd00:ec2::254", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "fd00:ec2::254 is a cloud metadata address", Special: audit.ClassMetadata}},
		{"azure wireserver", nil, nil, "allow", "168.63.129.16", 32526, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "168.63.129.16 is a cloud metadata address", Special: audit.ClassMetadata}},
		{"azure wireserver by name", nil, nil, "allow", "wire.example", 80, addrs("168.63.129.16"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "wire.example resolves to 168.63.129.16, a cloud metadata address", Special: audit.ClassMetadata}},
		{"azure wireserver allowed", []string{"168.63.129.16"}, nil, "deny", "168.63.129.16", 80, nil,
			Decision{Allow: true, Rule: "168.63.129.16", Reason: "it matches an allow entry", Special: ""}},
		{"unspecified", nil, nil, "allow", "0.0.0.0", 80, nil,
			Decision{Allow: false, Rule: audit.RuleHost, Reason: "0.0.0.0 is an unspecified address: the proxy's own host, which no allow entry opens", Special: audit.ClassUnspecified}},
		{"multicast", nil, nil, "allow", "239.1.1.1", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "239.1.1.1 is a multicast address", Special: audit.ClassMulticast}},
		{"nat64 embedding loopback", nil, nil, "allow", "64:ff9b::7f00:1", 80, nil,
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "64:ff9b::7f00:1 is a loopback address", Special: audit.ClassLoopback}},
		{"one private among public", nil, nil, "allow", "mixed.test", 443, addrs("93.184.216.34", "10.1.2.3"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "mixed.test resolves to 10.1.2.3, a private address", Special: audit.ClassPrivate}},
		{"wildcard does not name a private address", []string{"*.corp.test"}, nil, "allow", "git.corp.test", 443, addrs("10.1.2.3"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "git.corp.test resolves to 10.1.2.3, a private address", Special: audit.ClassPrivate}},
		{"exact name names a private address", []string{"git.corp.test"}, nil, "deny", "git.corp.test", 443, addrs("10.1.2.3"),
			Decision{Allow: true, Rule: "git.corp.test", Reason: "it matches an allow entry", Special: ""}},
		{"exact name does not name a metadata address", []string{"meta.test"}, nil, "deny", "meta.test", 80, addrs("169.254.169.254"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "meta.test resolves to 169.254.169.254, a cloud metadata address", Special: audit.ClassMetadata}},
		{"exact name does not name a link-local address", []string{"ll.test"}, nil, "deny", "ll.test", 80, addrs("fe80::1"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "ll.test resolves to fe80::1, a link-local address", Special: audit.ClassLinkLocal}},
		{"an address entry names a metadata address", []string{"169.254.169.254:80"}, nil, "deny", "meta.test", 80, addrs("169.254.169.254"),
			Decision{Allow: true, Rule: "169.254.169.254:80", Reason: "it matches an allow entry", Special: ""}},
		{"exact name with other port does not", []string{"git.corp.test:22"}, nil, "allow", "git.corp.test", 443, addrs("10.1.2.3"),
			Decision{Allow: false, Rule: audit.RulePrivate, Reason: "git.corp.test resolves to 10.1.2.3, a private address", Special: audit.ClassPrivate}},
		{"ip entry names it", []string{"127.0.0.1:3000"}, nil, "deny", "localhost", 3000, addrs("127.0.0.1"),
			Decision{Allow: true, Rule: "127.0.0.1:3000", Reason: "it matches an allow entry", Special: ""}},
		{"cidr entry names it", []string{"10.0.0.0/8"}, nil, "deny", "10.9.9.9", 80, nil,
			Decision{Allow: true, Rule: "10.0.0.0/8", Reason: "it matches an allow entry", Special: ""}},
		{"deny beats a named private address", []string{"10.0.0.0/8"}, []string{"10.9.9.9"}, "allow", "10.9.9.9", 80, nil,
			Decision{Allow: false, Rule: "10.9.9.9", Reason: "it matches a deny entry", Special: ""}},
		{"name only, before resolution", []string{"*.example.com"}, nil, "deny", "a.example.com", 443, nil,
			Decision{Allow: true, Rule: "*.example.com", Reason: "it matches an allow entry", Special: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.allow, tt.deny, tt.def)
			got := p.Decide(tt.host, tt.port, tt.addrs)
			// The special address that decided is named (the 403's advice needs it).
			if got.Special != "" && !got.Addr.IsValid() || got.Special == "" && got.Addr.IsValid() {
				t.Errorf("Decide(%q, %d, %v): Special %q with Addr %v", tt.host, tt.port, tt.addrs, got.Special, got.Addr)
			}
			if got.Addr = (netip.Addr{}); got != tt.want {
				t.Errorf("Decide(%q, %d, %v)\n got %+v\nwant %+v", tt.host, tt.port, tt.addrs, got, tt.want)
			}
		})
	}
}

// Review findings: the host's own addresses and the special-purpose ranges are refused
// unless named; under a default of deny a name with no allow entry is not resolved.
func TestPolicyHostAndSpecialAddresses(t *testing.T) {
	p, err := NewPolicy(entries(t, "203.0.113.9:8099"), nil, "allow")
	if err != nil {
		t.Fatal(err)
	}
	p.IsLocal = func(a netip.Addr) bool { return a == netip.MustParseAddr("93.184.216.34") }
	for _, tc := range []struct {
		host  string
		port  int
		allow bool
	}{
		{"93.184.216.34", 80, false},      // this host's public address
		{"192.0.2.2", 8099, false},        // TEST-NET-1
		{"198.18.0.1", 80, false},         // benchmarking
		{"2001:db8::1", 80, false},        // documentation
		{"203.0.113.9", 8099, true},       // named by an allow entry
		{"93.184.216.35", 80, true},       // an ordinary public address
		{"64:ff9b::5db8:d822", 80, false}, // NAT64 of this host's public address
		{"::127.0.0.1", 80, false},        // IPv4-compatible loopback
		{"::ffff:0:127.0.0.1", 80, false}, // IPv4-translated loopback
		{"2002:7f00:1::1", 80, false},     // 6to4 of the loopback
		{"fec0::1", 80, false},            // site-local
		{"4000::1", 80, false},            // outside global unicast
	} {
		if d := p.Decide(tc.host, tc.port, nil); d.Allow != tc.allow {
			t.Errorf("%s:%d: allow %v (%s), want %v", tc.host, tc.port, d.Allow, d.Reason, tc.allow)
		}
	}
}

type countingResolver struct{ n int }

func (c *countingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	c.n++
	return []netip.Addr{netip.MustParseAddr("93.184.216.35")}, nil
}

func TestDefaultDenyDoesNotResolve(t *testing.T) {
	p, err := NewPolicy(entries(t, "93.184.216.0/24", "allowed.example"), nil, "deny")
	if err != nil {
		t.Fatal(err)
	}
	r := &countingResolver{}
	d := &Dialer{Policy: p, Resolver: r}
	if _, err := d.Check(context.Background(), "akia-secret.exfil.example", 80); !errors.Is(err, ErrDenied) || r.n != 0 {
		t.Fatalf("denied name: err %v, %d lookups; want ErrDenied and none", err, r.n)
	}
	if _, err := d.Check(context.Background(), "allowed.example", 80); err != nil || r.n != 1 {
		t.Fatalf("allowed name: err %v, %d lookups", err, r.n)
	}
}

// An allow entry for a range that embeds IPv4 addresses does not open the loopback
// one embeds when the proxy refuses its host's loopback.
func TestPolicyEmbeddedLoopbackRefused(t *testing.T) {
	p, err := NewPolicy(entries(t, "2002::/16", "::/96", "2001::/32", "::ffff:0:0:0/96", "fe80::/10", "2a00:1450::/32"), nil, "deny")
	if err != nil {
		t.Fatal(err)
	}
	p.RefuseLoopback = true
	for _, host := range []string{"2002:7f00:1::1", "::127.0.0.1", "2001:0:5db8:d822::80ff:fffe", "::ffff:0:127.0.0.1", "fe80::5efe:7f00:1", "fe80::200:5efe:7f00:1"} {
		if d := p.Decide(host, 80, nil); d.Allow || d.Rule != audit.RuleHost || d.Special != audit.ClassLoopback {
			t.Errorf("%s: %+v, want refused as the proxy's host's loopback", host, d)
		}
	}
	if d := p.Decide("2002:5db8:d822::1", 80, nil); !d.Allow {
		t.Errorf("6to4 of a public address named by an allow entry: %+v, want allowed", d)
	}
	// An ISATAP identifier in a global prefix: an ordinary public address.
	if d := p.Decide("2a00:1450:4001::5efe:7f00:1", 80, nil); !d.Allow {
		t.Errorf("a global address with an ISATAP identifier named by an allow entry: %+v, want allowed", d)
	}
}

// TestPolicyNameOpensNoEmbeddedHostAddress: an allowed name that resolves to an IPv6
// form embedding this host's IPv4 address (6to4, Teredo, IPv4-compatible or
// -translated, local-use NAT64) is refused as the host's own address is: a relay or
// translator carries it there. Before, these were "protocol", "reserved" or "private"
// addresses, which a name entry opens.
func TestPolicyNameOpensNoEmbeddedHostAddress(t *testing.T) {
	p, err := NewPolicy(entries(t, "cdn.attacker.test"), nil, "deny")
	if err != nil {
		t.Fatal(err)
	}
	p.IsLocal = func(a netip.Addr) bool { return a == netip.MustParseAddr("93.184.216.34") } // 5db8:d822
	for addr, allow := range map[string]bool{
		"2002:5db8:d822::1":                    false, // 6to4
		"2001:0:4136:e378:8000:63bf:a247:27dd": false, // Teredo, the host the client
		"::5db8:d822":                          false, // IPv4-compatible
		"::ffff:0:5db8:d822":                   false, // IPv4-translated
		"64:ff9b:1::5db8:d822":                 false, // local-use NAT64
		"2002:5db8:d823::1":                    true,  // 6to4 of another host: a name entry opens it
	} {
		d := p.Decide("cdn.attacker.test", 443, []netip.Addr{netip.MustParseAddr(addr)})
		if d.Allow != allow || !allow && d.Special != audit.ClassThisHost {
			t.Errorf("cdn.attacker.test at %s: allow %v as %q (%s), want %v", addr, d.Allow, d.Special, d.Reason, allow)
		}
	}
}
