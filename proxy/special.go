package proxy

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

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
