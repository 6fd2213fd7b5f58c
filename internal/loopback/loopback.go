// Package loopback tunes TCP connections whose two ends are on this machine: the
// sandbox's 127.0.0.1:3128 as the proxy accepts it under bwrap, and as the
// in-container forwarder accepts it under docker and krun.
package loopback

import "net"

// Congestion is the congestion control Tune sets. A loopback connection has no link
// to share or probe. Under bbr, the default of many hosts (and inherited by every
// network namespace), every segment is paced (without the fq qdisc, by a timer per
// socket); reno sends what the window allows as the relay writes. Every unprivileged
// socket may choose reno (the kernel marks it unrestricted). See docs/performance.md
// "Egress proxy throughput".
const Congestion = "reno"

// Both reports whether c is a TCP connection whose local and remote addresses are
// both loopback addresses.
func Both(c net.Conn) bool {
	return isLoopback(c.LocalAddr()) && isLoopback(c.RemoteAddr())
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
