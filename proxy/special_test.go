package proxy

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

// TestHostAddressesFirstReadFails is the attack: when the very first read of the
// host's addresses fails, none of them may become a destination a name entry opens.
// HostAddresses returns no IsLocal but an error, and the proxy does not start.
func TestHostAddressesFirstReadFails(t *testing.T) {
	cause := errors.New("netlink: permission denied")
	isLocal, err := hostAddresses(time.Hour, func() ([]netip.Addr, error) { return nil, cause })
	if !errors.Is(err, ErrHostAddresses) || !errors.Is(err, cause) || isLocal != nil {
		t.Fatalf("the first read of the host's addresses failed: got an IsLocal %v and error %v, want none and ErrHostAddresses wrapping the cause", isLocal != nil, err)
	}
}

// TestHostAddressesRereadFails: a failing re-read keeps the addresses last read.
func TestHostAddressesRereadFails(t *testing.T) {
	host := netip.MustParseAddr("192.0.2.10")
	reads := 0
	read := func() ([]netip.Addr, error) {
		reads++
		if reads > 1 {
			return nil, errors.New("netlink: interrupted")
		}
		return []netip.Addr{host}, nil
	}
	isLocal, err := hostAddresses(0, read)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if !isLocal(host) || isLocal(netip.MustParseAddr("192.0.2.11")) {
			t.Fatalf("call %d: the addresses last read are not the ones in force", i)
		}
	}
	if reads < 2 {
		t.Fatalf("read %d times with a refresh of 0, want a re-read per call", reads)
	}
	if !isLocal(netip.MustParseAddr("::ffff:192.0.2.10")) {
		t.Fatal("the IPv4-mapped form of a host address is not the host's")
	}
}
