package shim

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// forwarderArg starts the shim as a forwarder (internal: the shim starts itself so).
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

// detach starts a copy of the shim that relays connections accepted on ln to target,
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
		fmt.Fprintln(stderr, "devsandbox-forwarder: want NETWORK ADDRESS")
		return 2
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-forwarder: %v\n", err)
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go Relay(c, args[0], args[1])
	}
}

// Relay connects c to address over network and copies both ways until both ends are
// done, half-closing as each direction ends.
func Relay(c net.Conn, network, address string) {
	defer c.Close()
	u, err := net.Dial(network, address)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 1)
	go func() {
		_, _ = io.Copy(u, c)
		closeWrite(u)
		done <- struct{}{}
	}()
	_, _ = io.Copy(c, u)
	closeWrite(c)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
