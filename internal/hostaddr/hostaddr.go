// Package hostaddr lists this host's interface addresses: the one notion of "this
// host's addresses" that the proxy refuses to reach by a name (proxy.HostAddresses,
// the docker companion's) and the egress allowlist refuses to open for one (the
// planner).
package hostaddr

import (
	"fmt"
	"net"
	"net/netip"
)

// Read returns the addresses of every interface of this host (up or down: an
// address is the host's while assigned), IPv4-mapped ones unmapped, without zones.
func Read() ([]netip.Addr, error) {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing this host's interface addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(ifs))
	for _, ia := range ifs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}
