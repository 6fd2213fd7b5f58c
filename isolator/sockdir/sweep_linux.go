package sockdir

import (
	"errors"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/relay"
)

// anyLive reports whether one of the *.sock sockets in the publish directory d accepts
// a connection. Each is dialled through a descriptor opened without following links
// (liveSocket): checked by name and dialled by name, a socket the sandbox swapped for a
// link in between would have had the sweep connect to the host socket the link names.
func anyLive(d string) bool {
	dirFD, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dirFD)
	socks, _ := filepath.Glob(filepath.Join(d, "*.sock"))
	return slices.ContainsFunc(socks, func(s string) bool {
		fd, err := relay.OpenSocket(dirFD, filepath.Base(s))
		if err != nil {
			return false // gone, or not a socket: a link is never followed
		}
		defer unix.Close(fd)
		return liveSocket(fd)
	})
}

// liveSocket reports whether the socket held by fd (relay.OpenSocket's) accepts a
// connection; refused means nobody serves it.
func liveSocket(fd int) bool {
	c, err := relay.DialFD(fd, 100*time.Millisecond)
	if err == nil {
		c.Close()
		return true
	}
	return !errors.Is(err, syscall.ECONNREFUSED)
}
