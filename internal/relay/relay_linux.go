// Package relay joins two connections, and dials a Unix socket a sandbox may have
// replaced without following a link: what the host's publish relay, the in-sandbox
// forwarder and a docker engine's companion share.
package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Conns copies between c and u both ways until both ends are done, then closes them.
func Conns(c, u net.Conn) {
	defer c.Close()
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

// DialNoFollow connects to the socket name in directory dirFD without following a
// symlink: a sandboxed process can replace its socket with a link to another socket
// (the Docker daemon's, the proxy's), which every visitor of a published port would
// otherwise reach.
func DialNoFollow(dirFD int, name string) (net.Conn, error) {
	fd, err := OpenSocket(dirFD, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return DialFD(fd, 0)
}

// OpenSocket opens the socket name in directory dirFD with O_PATH, without following
// a symlink, and checks that what it opened is a socket. The descriptor pins that
// inode: a link swapped in under the name afterwards is never reached through it.
// The caller closes it.
func OpenSocket(dirFD int, name string) (int, error) {
	fd, err := unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("checking %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", name, ErrNotSocket)
	}
	return fd, nil
}

// ErrNotSocket is OpenSocket's error for a name that is not a socket (a link, a
// regular file, a directory).
var ErrNotSocket = errors.New("not a socket")

// DialFD connects to the socket an OpenSocket descriptor holds, within timeout (none
// when 0). Linux connects through the descriptor's /proc magic link to exactly the
// inode it holds, whatever the name it was opened by names now.
func DialFD(fd int, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("unix", fmt.Sprintf("/proc/self/fd/%d", fd), timeout)
}
