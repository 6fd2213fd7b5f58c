// Package relay joins two connections, and dials a Unix socket a sandbox may have
// replaced without following a link: what the host's publish relay, the in-sandbox
// forwarder and a docker engine's companion share.
package relay

import (
	"fmt"
	"io"
	"net"

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
	fd, err := unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("%s in the publish directory is not a socket", name)
	}
	// The descriptor's /proc path reaches exactly the inode just checked.
	return net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d", fd))
}
