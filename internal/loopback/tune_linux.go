package loopback

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Tune sets Congestion on this end of c when c is a TCP connection whose two ends are
// loopback addresses; any other connection keeps the system's choice. It is an
// optimisation only: a failure leaves the connection as it was.
func Tune(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok || !Both(c) {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, Congestion)
	})
}
