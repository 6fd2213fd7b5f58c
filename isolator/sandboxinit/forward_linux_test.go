package sandboxinit

import (
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/loopback"
	"github.com/devsandbox/devsandbox/internal/loopback/loopbacktest"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// TestHandListener: the init hands a listening, non-blocking, close-on-exec TCP
// socket bound to the address asked for, in one ListenerMsg message followed by the
// readiness report (report), and keeps no copy of it; a bad address is refused
// before any socket is made.
func TestHandListener(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			s, err := listenFor(addr)
			if err != nil {
				if addr[0] == '[' {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatal(err)
			}
			if fl, err := unix.FcntlInt(uintptr(s), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
				t.Errorf("the listener would reach the command: descriptor flags %#x, %v", fl, err)
			}
			host := fds[0]
			initEnd, err := unix.Dup(fds[1]) // Ready closes the descriptor it reports on
			if err != nil {
				t.Fatal(err)
			}
			if err := report(initEnd, []int{s}, 0); err != nil {
				t.Fatal(err)
			}
			buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*4))
			n, oobn, _, _, err := unix.Recvmsg(host, buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
			if err != nil || n != 1 || buf[0] != wire.ListenerMsg {
				t.Fatalf("message %q, %v; want one ListenerMsg", buf[:n], err)
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(msgs) != 1 {
				t.Fatalf("control data %v, %v", msgs, err)
			}
			got, err := unix.ParseUnixRights(&msgs[0])
			if err != nil || len(got) != 1 {
				t.Fatalf("descriptors %v, %v", got, err)
			}
			fd := got[0]
			if n, oobn, _, _, err := unix.Recvmsg(host, buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT); err != nil || n != 1 || buf[0] != 'R' {
				t.Errorf("after the listener: message %q, %v; want the readiness report", buf[:n], err)
			} else if msgs, _ := unix.ParseSocketControlMessage(oob[:oobn]); len(msgs) > 1 {
				if pidfds, err := unix.ParseUnixRights(&msgs[1]); err == nil {
					for _, p := range pidfds {
						unix.Close(p)
					}
				}
			}
			for opt, want := range map[int]int{unix.SO_ACCEPTCONN: 1, unix.SO_TYPE: unix.SOCK_STREAM} {
				if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt); err != nil || v != want {
					t.Errorf("socket option %d: %d, %v; want %d", opt, v, err, want)
				}
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
				t.Errorf("the listener is blocking (flags %#x, %v)", fl, err)
			}
			sa, err := unix.Getsockname(fd)
			if err != nil {
				t.Fatal(err)
			}
			var bound netip.AddrPort
			switch sa := sa.(type) {
			case *unix.SockaddrInet4:
				bound = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
			case *unix.SockaddrInet6:
				bound = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
			}
			if want := netip.MustParseAddrPort(addr).Addr(); bound.Addr() != want {
				t.Errorf("bound to %v, want %v", bound, want)
			}
			// FileListener works on a copy: close the descriptor through its os.File,
			// never by number, or the File's finalizer closes the number again later,
			// whatever it then names (another test's file).
			lf := os.NewFile(uintptr(fd), "listener")
			ln, err := net.FileListener(lf)
			lf.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("ok"))
					c.Close()
				}
			}()
			c, err := net.Dial("tcp", bound.String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			b := make([]byte, 2)
			if _, err := c.Read(b); err != nil || string(b) != "ok" {
				t.Errorf("read %q, %v through the handed listener", b, err)
			}
			ln.Close()
			// The handed descriptor was the only copy left: with it closed, nothing
			// listens on the address any more.
			if c, err := net.Dial("tcp", bound.String()); err == nil {
				c.Close()
				t.Errorf("%v still accepts connections after the handed listener closed", bound)
			}
		})
	}
	for _, bad := range []string{"localhost:3128", "127.0.0.1", ""} {
		if s, err := listenFor(bad); err == nil {
			unix.Close(s)
			t.Errorf("listenFor(%q) made a listener", bad)
		}
	}
	s, err := listenFor("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := handListener(-1, s); err == nil {
		t.Error("handListener without a readiness socket succeeded")
	}
}

// TestRelayTunesLoopbackClient: the in-container forwarder gives its end of the
// command's connection to 127.0.0.1:3128 reno (package loopback) before it connects
// to the proxy, and still relays the bytes both ways.
func TestRelayTunesLoopbackClient(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "proxy.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	client, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { Relay(c, "unix", sock); close(done) }()
	u, err := ul.Accept() // Relay tuned c before it dialled
	if err != nil {
		t.Fatal(err)
	}
	if cc := loopbacktest.Congestion(t, c); cc != loopback.Congestion {
		t.Fatalf("the forwarder's end of a loopback client connection uses %q, want %q", cc, loopback.Congestion)
	}
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(u, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("relayed %q, %v; want ping", buf, err)
	}
	if _, err := u.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("relayed back %q, %v; want pong", buf, err)
	}
	u.Close()
	client.Close()
	<-done
}
