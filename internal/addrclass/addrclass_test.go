package addrclass

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// TestClassifyEmbeddedAndDeprecated is the attack table for the address classes: every
// IPv6 form that embeds an IPv4 address is judged by the address it embeds when that is
// loopback, the LAN or reserved; the deprecated and reserved ranges of the IANA
// special-purpose registries are not ordinary public addresses.
func TestClassifyEmbeddedAndDeprecated(t *testing.T) {
	for _, tc := range []struct {
		addr, class string
	}{
		// IPv4-compatible (::/96, deprecated)
		{"::127.0.0.1", ClassLoopback},
		{"::10.1.2.3", ClassPrivate},
		{"::169.254.169.254", ClassMetadata},
		{"::0.0.0.2", ClassUnspecified},
		{"::93.184.216.34", ClassReserved},
		// :: and ::1 are not IPv4-compatible forms of 0.0.0.0 and 0.0.0.1
		{"::", ClassUnspecified},
		{"::1", ClassLoopback},
		// IPv4-mapped and IPv4-translated (::ffff:0:0:0/96)
		{"::ffff:127.0.0.1", ClassLoopback},
		{"::ffff:0:127.0.0.1", ClassLoopback},
		{"::ffff:0:192.168.1.1", ClassPrivate},
		{"::ffff:0:93.184.216.34", ClassReserved},
		// 6to4
		{"2002:7f00:1::1", ClassLoopback},
		{"2002:c0a8:101::1", ClassPrivate},
		{"2002:0:0::1", ClassUnspecified},
		{"2002:5db8:d822::1", ClassProtocol},
		{"192.88.99.1", ClassProtocol},
		// Teredo: client inverted in the last 32 bits, server in bits 32-63
		{"2001:0:5db8:d822::80ff:fffe", ClassLoopback},
		{"2001:0:7f00:1::a2ff:fefe", ClassLoopback},
		{"2001:0:5db8:d822::a247:27dd", ClassProtocol},
		// NAT64, well-known and local-use (any RFC 6052 length from /48)
		{"64:ff9b::7f00:1", ClassLoopback},
		{"64:ff9b::a01:203", ClassPrivate},
		{"64:ff9b::5db8:d822", ""},
		{"64:ff9b:1::7f00:1", ClassLoopback},
		{"64:ff9b:1:7f00:1::", ClassLoopback},
		{"64:ff9b:1::a01:203", ClassPrivate},
		// ISATAP interface identifiers (::0:5efe:a.b.c.d, ::200:5efe:a.b.c.d), decoded
		// in a range that is special anyway, as the other forms' ranges are
		{"fe80::5efe:7f00:1", ClassLoopback},
		{"fe80::200:5efe:7f00:1", ClassLoopback},
		{"fe80::5efe:0:1", ClassUnspecified},
		{"fd12:3456::5efe:a9fe:a9fe", ClassMetadata},
		{"fd12:3456::5efe:a00:1", ClassPrivate},
		{"2001:db8::5efe:7f00:1", ClassLoopback},
		{"fe80::5efe:5db8:d822", ClassLinkLocal},  // embeds a public address: what it is
		{"fe80::100:5efe:7f00:1", ClassLinkLocal}, // the group bit: not an ISATAP identifier
		{"fe80::300:5efe:7f00:1", ClassLinkLocal},
		// in a global prefix it is an ordinary public address, routed over IPv6
		{"2a00:1450:4001::5efe:7f00:1", ""},
		{"2a00:1450:4001::200:5efe:a00:1", ""},
		// deprecated, discard and other IPv6 ranges
		{"fec0::1", ClassPrivate},
		{"100::1", ClassProtocol},
		{"100:0:0:1::1", ClassProtocol},
		{"3fff::1", ClassDocumentation},
		{"5f00::1", ClassProtocol},
		{"400::1", ClassReserved},
		{"4000::1", ClassReserved},
		{"fe00::1", ClassReserved},
		// IPv4
		{"0.1.2.3", ClassUnspecified},
		{"100.64.0.1", ClassCGNAT},
		{"192.0.0.9", ClassProtocol},
		{"198.19.255.255", ClassDocumentation},
		{"240.0.0.1", ClassReserved},
		{"255.255.255.255", ClassReserved},
		// ordinary public addresses stay unclassed
		{"93.184.216.34", ""},
		{"2606:2800:220:1::1", ""},
		{"2a00:1450:4001::1", ""},
	} {
		if got, what := Classify(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("Classify(%s) = %q (%s), want %q", tc.addr, got, what, tc.class)
		}
	}
}

// TestHostPrefixAgreesWithClassify: HostPrefix claims a prefix is the host's own only
// when Classify finds every address of it unspecified or loopback (checked on its first
// and last addresses and random ones), and it claims it for the embedded forms that fix
// a loopback or unspecified IPv4 address.
func TestHostPrefixAgreesWithClassify(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		host   bool
	}{
		{"127.0.0.0/8", true}, {"0.0.0.0/8", true}, {"127.1.0.0/16", true}, {"126.0.0.0/7", false}, {"0.0.0.0/0", false},
		{"::1/128", true}, {"::/128", true}, {"::2/128", true}, {"::/104", true}, {"::/96", false}, {"::/0", false},
		{"::ffff:127.0.0.0/104", true}, {"::ffff:0:127.0.0.0/104", true}, {"::ffff:0:0:0/96", false},
		{"::127.0.0.0/104", true}, {"::128.0.0.0/104", false},
		{"64:ff9b::7f00:0/104", true}, {"64:ff9b::/96", false},
		{"2002:7f00::/24", true}, {"2002::/24", true}, {"2002::/16", false}, {"2002:7e00::/23", false},
		{"2001::8000:0/104", true}, {"2001::ff00:0/104", true}, {"2001:0:7f00::/40", false}, {"2001::/32", false},
		{"64:ff9b:1::7f00:0/104", true}, {"64:ff9b:1:7f00::/56", true}, {"64:ff9b:1:0:7f::/80", true}, {"64:ff9b:1:0:7f::/72", false},
		{"64:ff9b:1::/48", false}, {"64:ff9b:1::a00:0/104", false},
		{"fe80::5efe:7f00:0/104", true}, {"fe80::200:5efe:0:0/104", true}, {"fe80::5efe:0:0/96", false},
		{"fe80::5efe:7f00:0/100", false}, {"2a00:1450::5efe:7f00:0/104", false}, {"fe80::100:5efe:7f00:0/104", false},
	} {
		p := netip.MustParsePrefix(tc.prefix)
		if got := HostPrefix(p) != ""; got != tc.host {
			t.Errorf("HostPrefix(%s) = %q, want host %v", p, HostPrefix(p), tc.host)
			continue
		}
		if !tc.host {
			continue
		}
		for _, a := range samples(p, 256) {
			if class, _ := Classify(a); class != ClassUnspecified && class != ClassLoopback {
				t.Errorf("HostPrefix(%s) claims the host, but Classify(%s) = %q", p, a, class)
			}
		}
	}
}

// samples returns p's first and last addresses and n random ones in p (a fixed seed).
func samples(p netip.Prefix, n int) []netip.Addr {
	r := rand.New(rand.NewPCG(1, 2))
	base := p.Masked().Addr().AsSlice()
	pick := func(fill func() byte) netip.Addr {
		b := slices.Clone(base)
		for i := range b {
			if free := len(b)*8 - p.Bits() - (len(b)-1-i)*8; free > 0 {
				mask := byte(0xff)
				if free < 8 {
					mask = byte(1<<free - 1)
				}
				b[i] |= fill() & mask
			}
		}
		a, _ := netip.AddrFromSlice(b)
		return a
	}
	out := []netip.Addr{pick(func() byte { return 0 }), pick(func() byte { return 0xff })}
	for range n {
		out = append(out, pick(func() byte { return byte(r.Uint32()) }))
	}
	return out
}

// TestClassifyAtThisHost: one of the host's addresses is "this host" in whatever range
// it lies (public, private, documentation, link-local, a NAT64 or mapped form of one);
// the loopback and unspecified ones keep their classes; no isLocal is Classify.
func TestClassifyAtThisHost(t *testing.T) {
	local := map[netip.Addr]bool{}
	for _, s := range []string{"93.184.216.99", "192.168.1.5", "192.0.2.2", "fe80::1", "127.0.0.1", "0.0.0.0"} {
		local[netip.MustParseAddr(s)] = true
	}
	isLocal := func(a netip.Addr) bool { return local[a] }
	for addr, want := range map[string]string{
		"93.184.216.99": ClassThisHost, "192.168.1.5": ClassThisHost, "192.0.2.2": ClassThisHost,
		"fe80::1%eth0": ClassThisHost, "::ffff:192.168.1.5": ClassThisHost, "64:ff9b::5db8:d863": ClassThisHost,
		"127.0.0.1": ClassLoopback, "0.0.0.0": ClassUnspecified, "192.168.1.6": ClassPrivate, "93.184.216.34": "",
	} {
		if got, _ := ClassifyAt(netip.MustParseAddr(addr), isLocal); got != want {
			t.Errorf("ClassifyAt(%s) = %q, want %q", addr, got, want)
		}
		got, _ := ClassifyAt(netip.MustParseAddr(addr), nil)
		if plain, _ := Classify(netip.MustParseAddr(addr)); got != plain {
			t.Errorf("ClassifyAt(%s, nil) = %q, want Classify's %q", addr, got, plain)
		}
	}
}

// TestClassifyAtEmbedsThisHost is the attack on the forms that embed an IPv4
// address: each embedding one of the host's addresses reaches (or is routed towards)
// the host, so each is "this host", which only an IP or CIDR entry opens — not
// "protocol", "reserved" or "private", which a name entry opens. An address of the
// same form embedding another IPv4 address keeps its class.
func TestClassifyAtEmbedsThisHost(t *testing.T) {
	public, lan := netip.MustParseAddr("93.184.216.99"), netip.MustParseAddr("192.168.1.5") // 5db8:d863, c0a8:0105
	isLocal := func(a netip.Addr) bool { return a == public || a == lan }
	for addr, want := range map[string]string{
		"::ffff:93.184.216.99":                 ClassThisHost, // IPv4-mapped
		"64:ff9b::5db8:d863":                   ClassThisHost, // NAT64, well-known prefix
		"64:ff9b:1::5db8:d863":                 ClassThisHost, // local-use NAT64, /96
		"64:ff9b:1:5db8:d8:6300::":             ClassThisHost, // local-use NAT64, /48 (bits 48-55, 64-87)
		"64:ff9b:1:0:c0:a801:500::":            ClassThisHost, // local-use NAT64, /64 (bits 72-103, after u)
		"::5db8:d863":                          ClassThisHost, // IPv4-compatible (deprecated)
		"::ffff:0:5db8:d863":                   ClassThisHost, // IPv4-translated
		"2002:5db8:d863::1":                    ClassThisHost, // 6to4 of the host's public address
		"2002:5db8:d863:1:2:3:4:5":             ClassThisHost, // 6to4, any subnet and interface
		"2001:0:4136:e378:8000:63bf:a247:279c": ClassThisHost, // Teredo, the host the client (inverted)
		"2001:0:5db8:d863:8000:63bf:3fff:fdd2": ClassThisHost, // Teredo, the host the server
		"fe80::5efe:c0a8:105":                  ClassThisHost, // ISATAP, link-local
		"fd00::200:5efe:5db8:d863":             ClassThisHost, // ISATAP, unique local
		"2002:5db8:d864::1":                    ClassProtocol, // 6to4 of another address
		"2001:0:4136:e378:8000:63bf:a247:279d": ClassProtocol, // Teredo, another client
		"::5db8:d864":                          ClassReserved, // IPv4-compatible, another address
		"64:ff9b::5db8:d864":                   "",            // NAT64 of a public address
		"2600::5efe:5db8:d863":                 "",            // ISATAP in a global /64: that site's, not the host's
	} {
		if got, _ := ClassifyAt(netip.MustParseAddr(addr), isLocal); got != want {
			t.Errorf("ClassifyAt(%s) = %q, want %q", addr, got, want)
		}
	}
}
