//go:build linux

package companion

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
)

// refusing returns the proxy's isLocal for the companion: the addresses the host
// named, the companion's own interface addresses and its default gateway (the engine's
// host on its bridge), read once.
func refusing(named []string) func(netip.Addr) bool {
	var once sync.Once
	set := map[netip.Addr]bool{}
	return func(a netip.Addr) bool {
		once.Do(func() {
			for _, n := range named {
				if a, err := netip.ParseAddr(n); err == nil {
					set[a.Unmap()] = true
				}
			}
			own, _ := hostaddr.Read() // none read: the host's and the gateway still are
			for _, a := range own {
				set[a] = true
			}
			if b, err := os.ReadFile("/proc/net/route"); err == nil {
				if gw, ok := defaultGateway(string(b)); ok {
					set[gw] = true
				}
			}
		})
		return set[a.WithZone("").Unmap()]
	}
}

// defaultGateway returns the IPv4 default route's gateway from /proc/net/route's text.
func defaultGateway(routes string) (netip.Addr, bool) {
	for _, line := range strings.Split(routes, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "00000000" {
			continue
		}
		v, err := strconv.ParseUint(f[2], 16, 32)
		if err != nil || v == 0 {
			continue
		}
		// The kernel prints the address in host byte order (little-endian here).
		return netip.AddrFrom4([4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}), true
	}
	return netip.Addr{}, false
}
