package proxy

import (
	"net"

	"golang.org/x/sys/unix"
)

// loopbackCongestion is the congestion control of the proxy's end of a client
// connection that stays on this machine (the sandbox's 127.0.0.1:3128, the proxy's
// own 127.0.0.1 listener). A loopback connection has no link to share or pace: the
// system default of many hosts, bbr, paces each 64 KiB segment on a timer, and its
// transmissions from the timer and from the reader's CPU (TCP small queues) land in
// another CPU's backlog than the proxy's own, so segments arrive out of order
// (SACK recovery, spurious retransmissions); reno sends what the window allows, in
// order. Every unprivileged socket may choose reno (the kernel marks it
// unrestricted). See docs/isolators.md "Egress proxy throughput".
const loopbackCongestion = "reno"

// tuneClient sets loopbackCongestion on c when both its ends are loopback addresses;
// a connection from anywhere else keeps the system's choice. It is an optimisation
// only: a failure leaves the connection as it was.
func tuneClient(c *net.TCPConn) {
	if !isLoopback(c.LocalAddr()) || !isLoopback(c.RemoteAddr()) {
		return
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, loopbackCongestion)
	})
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
