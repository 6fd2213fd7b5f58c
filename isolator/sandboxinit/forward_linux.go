package sandboxinit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/accept"
	"github.com/devsandbox/devsandbox/internal/loopback"
	"github.com/devsandbox/devsandbox/internal/relay"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// forwarderArg starts the init as a forwarder (internal: the init starts itself so).
const forwarderArg = "--forwarder"

// startForwarder serves the proxy inside the sandbox: it listens on the TCP address of
// spec ("ADDR=UNIXPATH") and relays each connection to the Unix socket (the host
// proxy, bound in).
func startForwarder(spec string) error {
	addr, sock, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("bad forward %q (want ADDR=UNIXPATH)", spec)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return detach(ln, "tcp", sock)
}

// listenFor listens on the TCP address addr (IP:PORT) for the host: the init hands
// the socket over the readiness socket (handListener, with the readiness report), and
// devsandbox passes it to the session proxy, which accepts the sandbox's connections
// itself, with no relay in between. It listens from here on: a connection made before
// the proxy serves it waits in its backlog. The descriptor is close-on-exec, so the
// command and the forwarders never hold it.
//
// The socket is made with plain system calls: the init never serves it, and net.Listen
// would first set up the runtime's network poller and probe the host's IPv6 and MPTCP
// support (seven system calls and the pages of that code) on the way to the command.
// It is non-blocking, as net.Listen's is, and a plain TCP socket.
func listenFor(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, fmt.Errorf("bad listen address %q (want IP:PORT): %w", addr, err)
	}
	domain, port := unix.AF_INET6, int(ap.Port())
	var sa unix.Sockaddr = &unix.SockaddrInet6{Port: port, Addr: ap.Addr().As16()}
	if ap.Addr().Is4() {
		domain, sa = unix.AF_INET, &unix.SockaddrInet4{Port: port, Addr: ap.Addr().As4()}
	}
	s, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	// As net.Listen does: a port in TIME_WAIT from an earlier listener is no obstacle.
	if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("setsockopt: %w", err)
	}
	if err := unix.Bind(s, sa); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(s, unix.SOMAXCONN); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return s, nil
}

// handListener hands s, a socket of listenFor, to the host on fd, the readiness
// socket, in one wire.ListenerMsg message, and closes it: the init keeps no copy, so
// if nobody on the host takes it, it closes and connections are refused.
func handListener(fd, s int) error {
	defer unix.Close(s)
	if fd < 0 {
		return errors.New("no readiness socket to hand the listener on (--ready-fd)")
	}
	return unix.Sendmsg(fd, []byte{wire.ListenerMsg}, unix.UnixRights(s), nil, 0)
}

// startPublisher serves a published port: it listens on the Unix socket of spec
// ("PORT=UNIXPATH", in a directory the host shares) and relays each connection to the
// sandbox's own 127.0.0.1:PORT, where the command's server listens.
func startPublisher(spec string) error {
	port, sock, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("bad publish %q (want PORT=UNIXPATH)", spec)
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	// The relay keeps serving the socket after this process closes its copy.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return detach(ln, "unix", net.JoinHostPort("127.0.0.1", port))
}

// serveDirForwarder serves a kept container's stable proxy endpoint ("ADDR=DIR"): it
// listens on ADDR for as long as the process lives and relays each connection to the
// session proxy socket in DIR that route names for it (routeProxy: the connecting
// process's session's). With no session live each connection is closed: there is no
// way out. One whose session cannot be told is answered with a 503 saying why.
func serveDirForwarder(spec string, route func(net.Conn) (string, error)) error {
	addr, dir, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("bad forward %q (want ADDR=DIR)", spec)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go accept.Loop(ln, func(c net.Conn) bool {
		go relayToSessionSocket(c, dir, route)
		return true
	})
	return nil
}

// relayToSessionSocket relays c to the proxy socket in dir that route names, if it is
// served from outside the container.
func relayToSessionSocket(c net.Conn, dir string, route func(net.Conn) (string, error)) {
	loopback.Tune(c)
	name, err := route(c)
	if err == nil {
		var u net.Conn
		if u, err = net.Dial("unix", filepath.Join(dir, name)); err == nil {
			if servedFromOutside(u) {
				relay.Conns(c, u)
				return
			}
			u.Close()
			err = fmt.Errorf("%s is not the session's proxy (a process of the container serves it)", name)
		}
	}
	if errors.Is(err, errNoSession) {
		c.Close()
		return
	}
	say(os.Stderr, "devsandbox-init", "a proxy connection from %s: %v", c.RemoteAddr(), err)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ndevsandbox: the kept container's proxy endpoint has no proxy for this connection: %v\n", err)
	c.Close()
}

// servedFromOutside reports whether the peer of the Unix connection u is a process
// outside this pid namespace (the host's proxy: its pid reads as 0 here). The
// directory is writable from inside the container, so a sandboxed process could
// plant a socket of its own there to receive other sessions' proxy traffic.
func servedFromOutside(u net.Conn) bool {
	uc, ok := u.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return false
	}
	return cred.Pid == 0
}

// detach starts a copy of the init that relays connections accepted on ln to target,
// detached from the command's terminal and session. Listening happens before the
// command starts, so its first connection cannot race the relay, which lives until
// the sandbox's pid namespace ends with the command.
func detach(ln net.Listener, kind, target string) error {
	defer ln.Close()
	lf, err := ln.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	dial := "unix"
	if kind == "unix" {
		dial = "tcp"
	}
	cmd := exec.Command("/proc/self/exe", forwarderArg, dial, target)
	cmd.Args[0] = "devsandbox-forwarder"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// forwarderMain relays connections accepted on fd 3 to args[1] over network args[0].
func forwarderMain(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		say(stderr, "devsandbox-forwarder", "want NETWORK ADDRESS")
		return 2
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		say(stderr, "devsandbox-forwarder", "%v", err)
		return 1
	}
	accept.Loop(ln, func(c net.Conn) bool {
		go Relay(c, args[0], args[1])
		return true
	})
	return 1
}

// Relay connects c to address over network and copies both ways until both ends are
// done, half-closing as each direction ends. A TCP end whose two addresses are
// loopback ones (the command's client on 127.0.0.1:3128, a published port's server)
// gets reno (package loopback): what the relay writes into it is sent as the window
// allows, not paced as bbr, the default of many hosts, would.
func Relay(c net.Conn, network, address string) {
	loopback.Tune(c)
	u, err := net.Dial(network, address)
	if err != nil {
		c.Close()
		return
	}
	loopback.Tune(u)
	relay.Conns(c, u)
}
