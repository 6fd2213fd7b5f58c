package sandboxinit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// served from outside the container. A connection it refuses reaches no proxy: the
// sessions it may have been are told (tell), for their audit logs.
func relayToSessionSocket(c net.Conn, dir string, route func(net.Conn) (string, error)) {
	loopback.Tune(c)
	var maybe []string // the sessions' proxy sockets it may be; nil: any
	name, err := route(c)
	if up := (*unplaced)(nil); errors.As(err, &up) {
		maybe = up.socks
	}
	if err == nil {
		maybe = []string{name}
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
	rf := readRequestLine(c)
	rf.Reason = "the kept container's proxy endpoint refused it: " + err.Error()
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ndevsandbox: the kept container's proxy endpoint has no proxy for this connection: %v\n", err)
	c.Close()
	if line, err := wire.EncodeRefusal(rf); err == nil {
		tell(maybe, append(line, '\n'))
	}
}

// requestLineLimit bounds how long, and how many bytes, the keeper reads of a refused
// connection's request line (what its audit record names).
const (
	requestLineLimit = time.Second
	requestLineBytes = 4096
)

// readRequestLine reads the request line the client of c sent first and returns what
// it names, for a refusal's record.
func readRequestLine(c net.Conn) wire.Refusal {
	_ = c.SetReadDeadline(time.Now().Add(requestLineLimit))
	defer c.SetReadDeadline(time.Time{})
	var buf [requestLineBytes]byte
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return parseRequestLine(string(buf[:i]))
		}
		if err != nil {
			break
		}
	}
	return parseRequestLine(string(buf[:n]))
}

// parseRequestLine returns what an HTTP proxy request line names ("CONNECT host:port
// HTTP/1.1", "GET http://host[:port]/path?query HTTP/1.1"): method, host, port and
// path, never the query. Pure.
func parseRequestLine(line string) wire.Refusal {
	f := strings.Fields(strings.TrimSuffix(line, "\r"))
	if len(f) < 2 {
		return wire.Refusal{}
	}
	r := wire.Refusal{Method: f[0]}
	target := f[1]
	if r.Method == "CONNECT" {
		r.Host, r.Port = hostPort(target, 443)
		return r
	}
	port := 80
	switch {
	case strings.HasPrefix(strings.ToLower(target), "http://"):
		target = target[len("http://"):]
	case strings.HasPrefix(strings.ToLower(target), "https://"):
		target, port = target[len("https://"):], 443
	default: // not a proxy request: its path only
		r.Path, _, _ = strings.Cut(target, "?")
		r.Path, _, _ = strings.Cut(r.Path, "#")
		return r
	}
	end := strings.IndexAny(target, "/?#")
	if end < 0 {
		end = len(target)
	}
	r.Host, r.Port = hostPort(target[:end], port)
	r.Path, _, _ = strings.Cut(target[end:], "?")
	r.Path, _, _ = strings.Cut(r.Path, "#")
	return r
}

// hostPort splits an authority ("host", "host:port", "[v6]:port", userinfo cut) into
// host and port, def when it names none.
func hostPort(authority string, def int) (string, int) {
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if h, p, err := net.SplitHostPort(authority); err == nil {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
			return h, n
		}
		return h, 0
	}
	return strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), def
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
