package proxy

import (
	"net"
	"testing"

	looptune "github.com/devsandbox/devsandbox/internal/loopback"
	"github.com/devsandbox/devsandbox/internal/loopback/loopbacktest"
)

// acceptOne listens on addr through the server's listener wrapper, dials it and
// returns the accepted end.
func acceptOne(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	defer ln.Close()
	l := tcpListener{ln.(*net.TCPListener)}
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

func TestLoopbackClientGetsReno(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			c := acceptOne(t, addr)
			if got := loopbacktest.Congestion(t, c); got != looptune.Congestion {
				t.Fatalf("congestion control of an accepted loopback connection = %q, want %q", got, looptune.Congestion)
			}
		})
	}
}

// A connection to one of the machine's own non-loopback addresses may come from
// another host: it keeps the system's congestion control.
func TestNonLoopbackClientKeepsDefault(t *testing.T) {
	addr := loopbacktest.NonLoopbackAddr(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	def := loopbacktest.Congestion(t, d) // a socket nothing tuned
	c := acceptOne(t, addr)
	if got := loopbacktest.Congestion(t, c); got != def {
		t.Fatalf("congestion control of a connection to %s = %q, want the system's %q", addr, got, def)
	}
}
