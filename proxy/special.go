package proxy

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// specialRanges are the destinations refused unless an allow entry names them. The
// table is read-only; more specific ranges come first so the reason is the precise one.
var specialRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a private address"},
	// IANA special-purpose registry: documentation, benchmarking and protocol ranges
	// are never meant to be public destinations (and are where test hosts live).
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol assignment"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address they embed.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// specialReason says what kind of special-purpose address a is ("a loopback address"),
// or returns "" for an ordinary public address. a must be unmapped.
func specialReason(a netip.Addr) string {
	if nat64.Contains(a) {
		b := a.As16()
		return specialReason(netip.AddrFrom4([4]byte(b[12:])))
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}

// HostAddresses returns an IsLocal for a Policy: it reports whether an address is one
// of this host's interface addresses, re-reading them at most every refresh (interfaces
// come and go: VPNs, docker bridges).
func HostAddresses(refresh time.Duration) func(netip.Addr) bool {
	var mu sync.Mutex
	var at time.Time
	var local map[netip.Addr]bool
	return func(a netip.Addr) bool {
		mu.Lock()
		defer mu.Unlock()
		if local == nil || time.Since(at) > refresh {
			local, at = map[netip.Addr]bool{}, time.Now()
			if ifs, err := net.InterfaceAddrs(); err == nil {
				for _, ia := range ifs {
					if n, ok := ia.(*net.IPNet); ok {
						if ip, ok := netip.AddrFromSlice(n.IP); ok {
							local[ip.Unmap()] = true
						}
					}
				}
			}
		}
		return local[a.Unmap()]
	}
}
