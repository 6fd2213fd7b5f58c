package loopback

import (
	"net"
	"testing"

	"github.com/devsandbox/devsandbox/internal/loopback/loopbacktest"
)

// pair returns the accepted and the dialled end of a connection to a listener on addr.
func pair(t *testing.T, addr string) (accepted, dialled net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, d
}

func TestTuneLoopbackGetsReno(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			c, d := pair(t, addr)
			Tune(c)
			Tune(d)
			for _, x := range []net.Conn{c, d} {
				if got := loopbacktest.Congestion(t, x); got != Congestion {
					t.Fatalf("congestion control of a loopback connection after Tune = %q, want %q", got, Congestion)
				}
			}
		})
	}
}

// A connection to one of the machine's own other addresses may come from another
// host: Tune leaves it with the system's congestion control.
func TestTuneNonLoopbackKeepsDefault(t *testing.T) {
	c, _ := pair(t, loopbacktest.NonLoopbackAddr(t))
	before := loopbacktest.Congestion(t, c)
	Tune(c)
	if got := loopbacktest.Congestion(t, c); got != before {
		t.Fatalf("Tune changed a non-loopback connection's congestion control from %q to %q", before, got)
	}
}

// Tune accepts any connection, not only TCP ones.
func TestTuneIgnoresUnix(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	Tune(a)
	if Both(a) {
		t.Fatal("Both reported a pipe as a loopback TCP connection")
	}
}
