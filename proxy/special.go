package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
)

// ErrHostAddresses is the class of the error HostAddresses returns when the host's
// addresses cannot be read at start: the proxy refuses them, so it does not start.
var ErrHostAddresses = errors.New("this host's addresses are unknown")

// HostAddresses returns an IsLocal for a Policy: it reports whether an address is one
// of this host's interface addresses (hostaddr.Read), re-reading them at most every
// refresh (interfaces come and go: VPNs, docker bridges). The first read happens
// here: when it fails, HostAddresses returns an error (ErrHostAddresses) and no
// IsLocal, since one that knew no address would let a name entry reach the host's
// services. When a later re-read fails, the addresses last read stay in force and
// the next call tries again.
func HostAddresses(refresh time.Duration) (func(netip.Addr) bool, error) {
	return hostAddresses(refresh, hostaddr.Read)
}

// hostAddresses is HostAddresses reading the addresses with read.
func hostAddresses(refresh time.Duration, read func() ([]netip.Addr, error)) (func(netip.Addr) bool, error) {
	set := func(addrs []netip.Addr) map[netip.Addr]bool {
		m := make(map[netip.Addr]bool, len(addrs))
		for _, h := range addrs {
			m[h.WithZone("").Unmap()] = true
		}
		return m
	}
	addrs, err := read()
	if err != nil {
		return nil, fmt.Errorf("%w (the proxy refuses them and cannot start without them; "+
			"run devsandbox where it may list the network interfaces): %w", ErrHostAddresses, err)
	}
	var mu sync.Mutex
	local, at := set(addrs), time.Now()
	return func(a netip.Addr) bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > refresh {
			if addrs, err := read(); err == nil {
				local, at = set(addrs), time.Now()
			}
		}
		return local[a.WithZone("").Unmap()]
	}, nil
}
