//go:build linux

package companion

import (
	"errors"
	"net/netip"
	"testing"
)

const routeTable = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
	"eth0\t00000000\t0163A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"

// TestRefusingFailsClosed is the attack: when the companion cannot read its own
// addresses or its routes (the engine host's address on its bridge), the proxy must
// not start knowing fewer of them.
func TestRefusingFailsClosed(t *testing.T) {
	own := netip.MustParseAddr("172.30.99.2")
	ok := func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
	routes := func() ([]byte, error) { return []byte(routeTable), nil }
	failAddrs := func() ([]netip.Addr, error) { return nil, errors.New("netlink: permission denied") }
	failRoutes := func() ([]byte, error) { return nil, errors.New("no /proc") }
	noRoute := func() ([]byte, error) { return []byte("Iface\tDestination\tGateway\n"), nil }
	for name, c := range map[string]struct {
		own    func() ([]netip.Addr, error)
		routes func() ([]byte, error)
	}{
		"own addresses unread": {failAddrs, routes},
		"routes unread":        {ok, failRoutes},
		"no default gateway":   {ok, noRoute},
	} {
		if isLocal, err := refusingFrom([]string{"192.0.2.1"}, c.own, c.routes); err == nil || isLocal != nil {
			t.Errorf("%s: the companion would start refusing fewer of the engine host's addresses (error %v)", name, err)
		}
	}
	isLocal, err := refusingFrom([]string{"192.0.2.1", "not an address"}, ok, routes)
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{"192.0.2.1": true, "172.30.99.2": true, "192.168.99.1": true, "::ffff:192.168.99.1": true, "192.0.2.2": false} {
		if got := isLocal(netip.MustParseAddr(a)); got != want {
			t.Errorf("isLocal(%s) = %v, want %v", a, got, want)
		}
	}
}
