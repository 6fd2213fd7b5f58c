package audit

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
	ClassReserved      = "reserved"      // 240.0.0.0/4
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
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast, "a multicast address"},
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast, "a multicast address"},
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
	{netip.MustParsePrefix("100::/64"), ClassProtocol, "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), ClassProtocol, "an IETF protocol assignment"},
	{netip.MustParsePrefix("2002::/16"), ClassProtocol, "a 6to4 address"},
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address they embed.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Classify returns the class of special-purpose address a is (ClassLoopback, …) and
// what it is in words ("a loopback address"), or "", "" for an ordinary public
// address. An IPv4-mapped or NAT64 address is classed by the IPv4 address it reaches.
func Classify(a netip.Addr) (class, what string) {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return Classify(netip.AddrFrom4([4]byte(b[12:])))
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.class, r.what
		}
	}
	return "", ""
}

// IsLoopbackName reports whether a host name is reserved for the local host: localhost
// and the names below it (RFC 6761), which resolvers answer with loopback addresses.
func IsLoopbackName(host string) bool {
	h := normalize(host)
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// normalize lower-cases a host and drops a trailing dot and IPv6 brackets.
func normalize(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

func isIPv6(h string) bool {
	a, err := netip.ParseAddr(h)
	return err == nil && a.Is6()
}
