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

// startForwarder listens on the TCP address of spec ("ADDR=UNIXPATH") inside the
// sandbox and starts a copy of the shim that relays each connection to the Unix socket,
// detached from the command's terminal and session. Listening happens here, before the
// command starts, so its first connection cannot race the forwarder. The forwarder
// lives until the sandbox's pid namespace ends with the command.
func startForwarder(spec string) error {
	addr, sock, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("bad forward %q (want ADDR=UNIXPATH)", spec)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	cmd := exec.Command("/proc/self/exe", forwarderArg, sock)
	cmd.Args[0] = "devsandbox-forwarder"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// forwarderMain relays connections accepted on fd 3 to the Unix socket args[0].
func forwarderMain(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "devsandbox-forwarder: want one socket path")
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
		go relay(c, args[0])
	}
}

func relay(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(u, c)
		if cw, ok := u.(*net.UnixConn); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	_, _ = io.Copy(c, u)
	if cw, ok := c.(*net.TCPConn); ok {
		_ = cw.CloseWrite()
	}
	<-done
}
