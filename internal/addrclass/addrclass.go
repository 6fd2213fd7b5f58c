// Package addrclass classes special-purpose IP addresses: loopback, unspecified, the
// LAN, metadata services, reserved and protocol ranges, and the IPv6 forms that embed
// an IPv4 address. It is the one classifier: the proxy decides by it at run time, the
// audit log records its classes, and the config check of allow entries explains by it.
package addrclass

import (
	"net/netip"
	"strings"
)

// Classes of special-purpose address (Record.Special), as Classify names them.
const (
	ClassMetadata      = "metadata"      // a cloud metadata service
	ClassUnspecified   = "unspecified"   // 0.0.0.0/8, ::: dialled, it is this host
	ClassLoopback      = "loopback"      // 127.0.0.0/8, ::1, and the names localhost and *.localhost
	ClassThisHost      = "this host"     // one of the proxy host's interface addresses
	ClassPrivate       = "private"       // RFC 1918, unique local IPv6: the LAN
	ClassCGNAT         = "cgnat"         // 100.64.0.0/10: a provider's or a VPN's network
	ClassLinkLocal     = "link-local"    // 169.254.0.0/16, fe80::/10
	ClassMulticast     = "multicast"     //
	ClassReserved      = "reserved"      // 240.0.0.0/4, IPv6 outside 2000::/3 and the ranges above
	ClassProtocol      = "protocol"      // IETF protocol assignments, 6to4, discard-only
	ClassDocumentation = "documentation" // documentation and benchmarking ranges: where test hosts live
)

// specialRanges are the special-purpose ranges, most specific first so the class is
// the precise one. The table is read-only.
var specialRanges = []struct {
	prefix netip.Prefix
	class  string
	what   string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), ClassMetadata, "a cloud metadata address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), ClassMetadata, "a cloud metadata address"},
	// Azure's WireServer (and host agent, port 32526): a virtual address of the public
	// range that serves the VM's goal state, extension settings and certificates.
	{netip.MustParsePrefix("168.63.129.16/32"), ClassMetadata, "a cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), ClassUnspecified, "an unspecified address"},
	{netip.MustParsePrefix("::/128"), ClassUnspecified, "an unspecified address"},
	{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback, "a loopback address"},
	{netip.MustParsePrefix("::1/128"), ClassLoopback, "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate, "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate, "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate, "a private address"},
	{netip.MustParsePrefix("fc00::/7"), ClassPrivate, "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), ClassCGNAT, "a carrier-grade NAT address"},
	{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal, "a link-local address"},
	{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal, "a link-local address"},
	// Site-local (RFC 3879 deprecated it): a site's own network, as a unique local address.
	{netip.MustParsePrefix("fec0::/10"), ClassPrivate, "a site-local address"},
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast, "a multicast address"},
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast, "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), ClassReserved, "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), ClassReserved, "a reserved address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), ClassPrivate, "a private address"},
	// IANA special-purpose registry: documentation, benchmarking and protocol ranges
	// are never meant to be public destinations (and are where test hosts live).
	{netip.MustParsePrefix("192.0.0.0/24"), ClassProtocol, "an IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), ClassDocumentation, "a documentation address"},
	{netip.MustParsePrefix("198.51.100.0/24"), ClassDocumentation, "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), ClassDocumentation, "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), ClassDocumentation, "a benchmarking address"},
	{netip.MustParsePrefix("2001:db8::/32"), ClassDocumentation, "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), ClassDocumentation, "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), ClassProtocol, "a 6to4 relay anycast address"},
	{netip.MustParsePrefix("100::/64"), ClassProtocol, "a discard-only address"},
	{netip.MustParsePrefix("100:0:0:1::/64"), ClassProtocol, "a dummy IPv6 prefix address"},
	{netip.MustParsePrefix("5f00::/16"), ClassProtocol, "a segment routing (SRv6) address"},
	{netip.MustParsePrefix("2001::/23"), ClassProtocol, "an IETF protocol assignment"},
	{netip.MustParsePrefix("2002::/16"), ClassProtocol, "a 6to4 address"},
}

// Forms of IPv6 address that embed an IPv4 address (RFC 6052, 4291, 2765, 3056, 4380).
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // the well-known NAT64 prefix
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")  // local-use NAT64 (RFC 8215), /48 to /96
	compat     = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT)
	sixToFour  = netip.MustParsePrefix("2002::/16")       // 6to4: the IPv4 address in bits 16-47
	teredo     = netip.MustParsePrefix("2001::/32")       // Teredo: server in bits 32-63, client inverted in 96-127
	mapped     = netip.MustParsePrefix("::ffff:0:0/96")   // IPv4-mapped
	global6    = netip.MustParsePrefix("2000::/3")        // IPv6 global unicast: the rest is reserved
	loopback6  = netip.MustParsePrefix("::1/128")         //
	unspec6    = netip.MustParsePrefix("::/128")          //
)

// Classify returns the class of special-purpose address a is (ClassLoopback, …) and
// what it is in words ("a loopback address"), or "", "" for an ordinary public
// address. An IPv4-mapped or NAT64 address is classed by the IPv4 address it reaches;
// the other forms that embed an IPv4 address (IPv4-compatible, IPv4-translated, 6to4,
// Teredo, local-use NAT64) by the address they embed when that is special, else as
// what they are (reserved, protocol, private): none is an ordinary public address.
// IPv6 outside global unicast (2000::/3) and the ranges the registries name is
// reserved.
func Classify(a netip.Addr) (class, what string) {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		return Classify(Embedded(a))
	}
	if a.Is6() && !loopback6.Contains(a) && !unspec6.Contains(a) {
		if class, what := embeddedClass(a); class != "" {
			return class, what
		}
	}
	return rangeClass(a)
}

// rangeClass is the class of the special-purpose range a lies in, embedded addresses
// aside, or "", "" for an ordinary public address.
func rangeClass(a netip.Addr) (class, what string) {
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.class, r.what
		}
	}
	switch {
	case compat.Contains(a):
		return ClassReserved, "an IPv4-compatible address (deprecated)"
	case translated.Contains(a):
		return ClassReserved, "an IPv4-translated address"
	case a.Is6() && !global6.Contains(a):
		return ClassReserved, "a reserved address"
	}
	return "", ""
}

// isatap reports whether the IPv6 address b has an ISATAP interface identifier (RFC
// 5214 6.1): 0000:5efe or, for a globally unique IPv4 address, 0200:5efe, then the
// IPv4 address of the node on the ISATAP site's IPv4 network.
func isatap(b [16]byte) bool {
	return (b[8] == 0 || b[8] == 2) && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe
}

// Embedded returns the IPv4 address a well-known NAT64 address reaches, else a.
func Embedded(a netip.Addr) netip.Addr {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// embeddedClass returns the class of the special IPv4 address the IPv6 address a
// embeds, or "" when it embeds none or an ordinary public one. The forms are those of
// a range that is not an ordinary public one anyway, so judging them by the address
// they embed never refuses a public destination. A local-use NAT64 address may embed
// its IPv4 address at any RFC 6052 length from /48: every place is judged, and only a
// loopback one counts (the address is private anyway). An ISATAP interface identifier
// has no range of its own: it may end any /64, and in a global one the address is an
// ordinary public one, routed over IPv6 to its site, whose IPv4 network alone the
// embedded address belongs to (ISATAP's embedded addresses are mostly private ones).
// It is decoded only in a range that is special anyway (link-local, unique local,
// documentation, reserved), as the other forms are.
func embeddedClass(a netip.Addr) (class, what string) {
	for _, c := range embeddedAddrs(a) {
		if class, what := Classify(c); class != "" {
			if nat64Local.Contains(a) && class != ClassLoopback {
				continue // private as a whole; the places overlap, so zeros mean nothing
			}
			return class, what
		}
	}
	return "", ""
}

// embeddedAddrs returns the IPv4 addresses the IPv6 address a may embed, by its form
// (embeddedClass says which and where), most telling first; none for other addresses.
func embeddedAddrs(a netip.Addr) []netip.Addr {
	b := a.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case !a.Is6():
		return nil
	case nat64.Contains(a), compat.Contains(a), translated.Contains(a):
		return []netip.Addr{v4(12, 13, 14, 15)}
	case sixToFour.Contains(a):
		return []netip.Addr{v4(2, 3, 4, 5)}
	case teredo.Contains(a):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{client, v4(4, 5, 6, 7)}
	case nat64Local.Contains(a):
		return []netip.Addr{v4(12, 13, 14, 15), v4(9, 10, 11, 12), v4(7, 9, 10, 11), v4(6, 7, 9, 10)}
	case isatap(b):
		if class, _ := rangeClass(a); class != "" {
			return []netip.Addr{v4(12, 13, 14, 15)}
		}
	}
	return nil
}

// HostPrefix says what every address of p is, in Classify's words, when Classify finds
// each one unspecified or loopback: the dialling host's own, which the proxy never
// connects to whatever the allow entries say. Otherwise it returns "". It reads the
// IPv4 address an IPv6 form embeds (IPv4-mapped, NAT64, IPv4-compatible,
// IPv4-translated, 6to4, a Teredo client, local-use NAT64 where only loopback counts,
// ISATAP in a special range) from the bits p fixes; where p leaves that address's first byte open, it returns "".
func HostPrefix(p netip.Prefix) string {
	p = p.Masked()
	if !p.IsValid() {
		return ""
	}
	if p.IsSingleIP() {
		if class, what := Classify(p.Addr()); class == ClassUnspecified || class == ClassLoopback {
			return what
		}
		return ""
	}
	a, bits := p.Addr().WithZone(""), p.Bits()
	if a.Is4() {
		return hostByte(a.As4()[0], bits)
	}
	b := a.As16()
	within := func(form netip.Prefix) bool { return form.Contains(a) && bits >= form.Bits() }
	for _, f := range []struct {
		form netip.Prefix
		at   int // the byte where the IPv4 address starts
	}{{mapped, 12}, {nat64, 12}, {compat, 12}, {translated, 12}, {sixToFour, 2}} {
		if within(f.form) {
			return hostByte(b[f.at], bits-8*f.at)
		}
	}
	switch {
	case within(teredo):
		return hostByte(^b[12], bits-96) // the client, judged first
	case within(nat64Local):
		for _, at := range []int{12, 9, 7, 6} {
			if w := hostByte(b[at], bits-8*at); w != "" && b[at] == 127 {
				return w
			}
		}
	case bits >= 96 && isatap(b):
		// Every address of p is in the range a is in: the special ranges are /96 or
		// shorter, but for single addresses (not ISATAP ones) and ranges inside others.
		if class, _ := rangeClass(a); class != "" {
			return hostByte(b[12], bits-96)
		}
	}
	return ""
}

// hostByte says what an IPv4 address whose first byte is first is, when the first
// known bits of it are fixed and it is unspecified (0.0.0.0/8) or loopback (127.0.0.0/8).
func hostByte(first byte, known int) string {
	if known < 8 {
		return ""
	}
	switch first {
	case 0:
		return "an unspecified address"
	case 127:
		return "a loopback address"
	}
	return ""
}

// IsLoopbackName reports whether a host name is reserved for the local host: localhost
// and the names below it (RFC 6761), which resolvers answer with loopback addresses.
func IsLoopbackName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// ClassifyAt is Classify on a host whose own interface addresses isLocal reports
// (nil: none known). One of them is ClassThisHost whatever range it lies in — a LAN,
// bridge or documentation address of the host as much as a public one: services bound
// to 0.0.0.0 listen on each. So is an IPv6 address of a form that embeds one of them
// (IPv4-mapped, NAT64 and local-use NAT64 at every RFC 6052 place, IPv4-compatible,
// IPv4-translated, 6to4, Teredo's client or server, ISATAP in a special range), which
// a translator, relay or tunnel carries to the host. The unspecified and loopback
// addresses keep their classes, which are refused whatever the entries.
func ClassifyAt(a netip.Addr, isLocal func(netip.Addr) bool) (class, what string) {
	class, what = Classify(a)
	if class == ClassUnspecified || class == ClassLoopback || isLocal == nil {
		return class, what
	}
	if a = a.WithZone("").Unmap(); isLocal(a) {
		return ClassThisHost, "an address of this host"
	}
	if a.Is6() && !loopback6.Contains(a) && !unspec6.Contains(a) {
		for _, c := range embeddedAddrs(a) {
			if isLocal(c) {
				return ClassThisHost, "an address of this host"
			}
		}
	}
	return class, what
}
