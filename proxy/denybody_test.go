package proxy

import (
	"net/netip"
	"regexp"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// TestDenyBodyAdviceAllows: the entry a 403 tells the user to add opens what was
// refused, and only that port. A name refused because it resolved to an address no
// host-name entry opens (metadata, link-local, multicast, this host's) is told the
// address entry, not the name: before, the body said "--allow cdn.attacker.test",
// which opens nothing of the kind.
func TestDenyBodyAdviceAllows(t *testing.T) {
	hostAddr := netip.MustParseAddr("192.168.1.5")
	isLocal := func(a netip.Addr) bool { return a == hostAddr }
	advice := regexp.MustCompile(`--allow (\S+) \(or add it to egress\.allow\)`)
	for _, tc := range []struct {
		host string
		port int
		addr string
		def  string
		want string // the entry advised
	}{
		{"cdn.example.test", 443, "93.184.216.34", "deny", "cdn.example.test:443"},
		{"cdn.example.test", 80, "93.184.216.34", "deny", "cdn.example.test:80"},
		{"nas.lan", 443, "10.1.2.3", "allow", "nas.lan:443"},
		{"cdn.attacker.test", 80, "169.254.169.254", "allow", "169.254.169.254:80"},
		{"cdn.attacker.test", 443, "fd00:ec2::254", "deny", "[fd00:ec2::254]:443"},
		{"cdn.attacker.test", 443, "fe80::1", "allow", "[fe80::1]:443"},
		{"cdn.attacker.test", 443, "192.168.1.5", "allow", "192.168.1.5:443"},
		{"169.254.169.254", 80, "", "allow", "169.254.169.254:80"},
	} {
		var addrs []netip.Addr
		if tc.addr != "" {
			addrs = []netip.Addr{netip.MustParseAddr(tc.addr)}
		}
		pol := mustPolicy(t, nil, nil, tc.def)
		pol.IsLocal = isLocal
		d := pol.Decide(tc.host, tc.port, addrs)
		if d.Allow {
			t.Fatalf("%s:%d at %v: allowed, want a denial", tc.host, tc.port, addrs)
		}
		body := denyBody("CONNECT", tc.host, tc.port, d)
		m := advice.FindStringSubmatch(body)
		if m == nil || m[1] != tc.want {
			t.Errorf("%s:%d at %s: the 403 says\n%s\nwant it to advise --allow %s", tc.host, tc.port, tc.addr, body, tc.want)
			continue
		}
		// Followed, the advice opens the port refused and no other.
		fixed := mustPolicy(t, []string{m[1]}, nil, tc.def)
		fixed.IsLocal = isLocal
		for _, port := range []int{tc.port, 22} {
			if got := fixed.Decide(tc.host, port, addrs); got.Allow != (port == tc.port) {
				t.Errorf("%s:%d at %s, advised %q: port %d allowed %v (%s: %s)", tc.host, tc.port, tc.addr, m[1], port, got.Allow, got.Rule, got.Reason)
			}
		}
	}
}

// TestDenyBodyNamesNoHostNameFix: for a name refused as a metadata (or link-local,
// multicast, this host's) address, the body says no host-name entry opens it.
func TestDenyBodyNamesNoHostNameFix(t *testing.T) {
	pol := mustPolicy(t, []string{"cdn.attacker.test"}, nil, "allow")
	d := pol.Decide("cdn.attacker.test", 80, []netip.Addr{netip.MustParseAddr("169.254.169.254")})
	got := denyBody("GET", "cdn.attacker.test", 80, d)
	want := `devsandbox proxy: GET cdn.attacker.test:80 refused by rule "private address": cdn.attacker.test resolves to 169.254.169.254, a cloud metadata address.` + "\n" +
		"No host-name entry opens that address, whose choice is the name's DNS's: to allow the address itself, run devsandbox with --allow 169.254.169.254:80 (or add it to egress.allow).\n"
	if d.Rule != audit.RulePrivate || got != want {
		t.Errorf("denyBody =\n%s\nwant\n%s", got, want)
	}
}
