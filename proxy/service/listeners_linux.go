package service

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/fdpass"
)

// listenerMsg tags a message on the listener channel that carries one listening socket.
const listenerMsg = 'L'

// NewListenerChannel makes the channel on which devsandbox hands devsandbox-proxy
// listening sockets to serve: a Unix socket pair, one end for each. Nothing else holds
// either end (both are close-on-exec; Start passes the proxy its end).
func NewListenerChannel() (host, proxy *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the proxy's listener channel: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "proxy listeners"), os.NewFile(uintptr(fds[1]), "listeners"), nil
}

// SendListener hands ln, a listening TCP socket, to the proxy on the host end of the
// listener channel; the proxy serves it as it serves its Unix socket (no credential:
// whoever made ln controls who can connect). The caller keeps its own copy, which it
// should close: then the proxy's copy is the only one, and if the proxy is gone the
// socket closes and connections are refused.
func SendListener(ch *os.File, ln *os.File) error {
	rc, err := ln.SyscallConn() // Fd would switch the shared description to blocking
	if err != nil {
		return fmt.Errorf("handing the proxy its listener: %w", err)
	}
	if cerr := rc.Control(func(fd uintptr) {
		if err = checkListener(int(fd)); err == nil {
			err = unix.Sendmsg(int(ch.Fd()), []byte{listenerMsg}, unix.UnixRights(int(fd)), nil, 0)
			if err != nil {
				err = fmt.Errorf("handing the proxy its listener: %w", err)
			}
		}
	}); cerr != nil {
		return fmt.Errorf("handing the proxy its listener: %w", cerr)
	}
	return err
}

// ReceiveListeners reads listening sockets from the proxy's end of the listener channel
// and calls serve with each, until the channel ends. A descriptor that is not a
// listening TCP socket is closed and reported to bad, and not served.
func ReceiveListeners(ch *os.File, serve func(net.Listener), bad func(error)) {
	defer ch.Close()
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(ch.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		fds, perr := fdpass.All(oob[:oobn])
		if perr == nil && (n != 1 || buf[0] != listenerMsg || len(fds) != 1) {
			perr = fmt.Errorf("unexpected message on the listener channel (%d bytes, %d descriptors)", n, len(fds))
		}
		if perr == nil {
			perr = checkListener(fds[0])
		}
		if perr != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			bad(perr)
			continue
		}
		f := os.NewFile(uintptr(fds[0]), "listener")
		ln, err := net.FileListener(f)
		f.Close() // ln holds a duplicate
		if err != nil {
			bad(fmt.Errorf("serving a handed listener: %w", err))
			continue
		}
		serve(ln)
	}
}

// checkListener reports whether fd is a listening TCP socket (IPv4 or IPv6).
func checkListener(fd int) error {
	var opts [3]int // SO_TYPE, SO_DOMAIN, SO_ACCEPTCONN
	for i, o := range []int{unix.SO_TYPE, unix.SO_DOMAIN, unix.SO_ACCEPTCONN} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o)
		if err != nil {
			return fmt.Errorf("a handed descriptor is not a listening TCP socket: %w", err)
		}
		opts[i] = v
	}
	typ, dom, acc := opts[0], opts[1], opts[2]
	if typ != unix.SOCK_STREAM || (dom != unix.AF_INET && dom != unix.AF_INET6) || acc != 1 {
		return fmt.Errorf("a handed descriptor is not a listening TCP socket (domain %d, type %d, listening %d)", dom, typ, acc)
	}
	return nil
}
