// Package publish relays the sandbox's published ports: the host's
// 127.0.0.1:HOST_PORT to the Unix socket the sandbox's init serves for SANDBOX_PORT in
// the session's publish directory (egress.Rules.PublishDir), which the sandbox can
// write. Linux only: elsewhere Start refuses.
package publish

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/accept"
	"github.com/devsandbox/devsandbox/internal/relay"
	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator"
)

// Start listens on the host's 127.0.0.1:HOST_PORT for each of p's published ports and
// relays every connection to the sandbox through its socket in the publish directory,
// which it makes (mode 0700, in the socket directory). A port already in use fails
// the run before the command starts. stop closes the ports and removes the directory
// with whatever the sandbox left in it, following no link.
func Start(p *isolator.Plan) (stop func(), err error) {
	dir := p.Egress.PublishDir
	if err := os.MkdirAll(p.Egress.SocketDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the publish directory: %w", err)
	}
	// The directory is writable from inside the sandbox: hold it by descriptor, so
	// what is renamed or planted in its place later is not followed.
	dirFD, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the publish directory: %w", err)
	}
	var lns []net.Listener
	var wg sync.WaitGroup
	stop = func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		unix.Close(dirFD)
		// rmtree: the sandbox may have left a directory it made unreadable there,
		// which os.RemoveAll cannot remove (it would stay on the host).
		_ = rmtree.RemoveAll(dir)
	}
	for _, f := range p.Egress.Forwards {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(f.HostPort)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			return nil, fmt.Errorf("%w: publishing %s: %w; pick another host port with --publish HOST_PORT:%d", isolator.ErrProtection, addr, err, f.SandboxPort)
		}
		lns = append(lns, ln)
		sock := strconv.Itoa(int(f.SandboxPort)) + ".sock"
		wg.Add(1)
		go func() {
			defer wg.Done()
			accept.Loop(ln, func(c net.Conn) bool {
				go func() {
					u, err := relay.DialNoFollow(dirFD, sock)
					if err != nil {
						c.Close()
						return
					}
					relay.Conns(c, u)
				}()
				return true
			})
		}()
	}
	return stop, nil
}
