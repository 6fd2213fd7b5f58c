// Package probe checks from inside a network namespace, without privileges, that
// the egress rules of package netfilter are in force there. It is apart from
// netfilter so that the sandbox's init can check the rules without linking the
// netlink and nftables code that applies them.
package probe

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Check reports whether the egress rules are in force in this process's network
// namespace, without privileges: a datagram to the probe address (egress.ProbeAddr,
// the first rule of every rendering drops it) is refused with EPERM. Without the
// rules it goes to the namespace's own loopback, where nothing listens, so the check
// sends nothing anywhere. The sandbox's init runs it before the command starts.
func Check(probe string) error {
	addr, err := netip.ParseAddrPort(probe)
	if err != nil || !addr.Addr().Is4() {
		return fmt.Errorf("bad egress probe address %q", probe)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("checking the egress rules: %v", err)
	}
	defer unix.Close(fd)
	err = unix.Sendto(fd, []byte("devsandbox egress probe"), 0, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()})
	switch {
	case errors.Is(err, unix.EPERM):
		return nil
	case err == nil:
		return errors.New("the egress rules are not in effect in the sandbox's network namespace (the firewall's probe rule let a datagram through)")
	}
	return fmt.Errorf("checking the egress rules: sending to the probe address %s: %v", probe, err)
}
