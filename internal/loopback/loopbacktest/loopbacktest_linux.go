// Package loopbacktest holds the test helpers of package loopback's users: reading
// the congestion control a socket ended up with, and finding one of the machine's
// own addresses that is not a loopback one. Only tests import it.
package loopbacktest

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// Congestion is the congestion control of c's socket (c is a *net.TCPConn).
func Congestion(t testing.TB, c net.Conn) string {
	t.Helper()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		t.Fatalf("congestion control of a %T: not a TCP connection", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatalf("reading the congestion control: %v", gerr)
	}
	return name
}

// NonLoopbackAddr is host:0 for one of the machine's own IPv4 addresses that is not
// a loopback one; the test is skipped when there is none.
func NonLoopbackAddr(t testing.TB) string {
	t.Helper()
	ifaddrs, _ := net.InterfaceAddrs()
	for _, a := range ifaddrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return net.JoinHostPort(ipn.IP.String(), "0")
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}
