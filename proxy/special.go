package proxy

import (
	"net/netip"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
)

// HostAddresses returns an IsLocal for a Policy: it reports whether an address is one
// of this host's interface addresses (hostaddr.Read), re-reading them at most every
// refresh (interfaces come and go: VPNs, docker bridges). When a re-read fails, the
// addresses last read stay in force and the next call tries again.
func HostAddresses(refresh time.Duration) func(netip.Addr) bool {
	var mu sync.Mutex
	var at time.Time
	var local map[netip.Addr]bool
	return func(a netip.Addr) bool {
		mu.Lock()
		defer mu.Unlock()
		if local == nil || time.Since(at) > refresh {
			if addrs, err := hostaddr.Read(); err == nil {
				local, at = make(map[netip.Addr]bool, len(addrs)), time.Now()
				for _, h := range addrs {
					local[h] = true
				}
			}
		}
		return local[a.WithZone("").Unmap()]
	}
}
