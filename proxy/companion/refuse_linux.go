//go:build linux

package companion

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
)

// refusing returns the proxy's isLocal for the companion: the addresses the host
// named, the companion's own interface addresses and its default gateway (the engine's
// host on its bridge), read once, now. When its own addresses or its gateway cannot be
// read, it returns an error: a proxy refusing fewer of the engine host's addresses
// than it should would let a name entry reach them, so the companion does not start.
func refusing(named []string) (func(netip.Addr) bool, error) {
	return refusingFrom(named, hostaddr.Read, func() ([]byte, error) { return os.ReadFile("/proc/net/route") })
}

// refusingFrom is refusing reading the companion's addresses with own and its routes
// (/proc/net/route's text) with routes.
func refusingFrom(named []string, own func() ([]netip.Addr, error), routes func() ([]byte, error)) (func(netip.Addr) bool, error) {
	set := map[netip.Addr]bool{}
	for _, n := range named {
		if a, err := netip.ParseAddr(n); err == nil {
			set[a.Unmap()] = true
		}
	}
	addrs, err := own()
	if err != nil {
		return nil, fmt.Errorf("the egress proxy refuses the engine host's addresses and needs its own to do so: %w", err)
	}
	for _, a := range addrs {
		set[a.WithZone("").Unmap()] = true
	}
	b, err := routes()
	if err != nil {
		return nil, fmt.Errorf("the egress proxy refuses the engine host's address on its bridge, its default gateway, and cannot read its routes: %w", err)
	}
	gw, ok := defaultGateway(string(b))
	if !ok {
		return nil, fmt.Errorf("the egress proxy refuses the engine host's address on its bridge, its default gateway, and has none: run the companion on a bridge network")
	}
	set[gw] = true
	return func(a netip.Addr) bool { return set[a.WithZone("").Unmap()] }, nil
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
