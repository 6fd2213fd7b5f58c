package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/shim"
)

// planPublish gives the plan the private directory where the sandbox serves its
// published ports (Unix sockets; short paths, like the proxy socket's).
func planPublish(p *isolator.Plan, h config.Host, session string) {
	if len(p.Egress.Forwards) > 0 {
		p.Egress.PublishDir = filepath.Join(p.Egress.SocketDir, "publish-"+session)
	}
}

// startPublish listens on the host's 127.0.0.1:HOST_PORT for each published port and
// relays every connection to the sandbox through its socket in the publish directory.
// A port already in use fails the run before the command starts.
func startPublish(p *isolator.Plan) (stop func(), err error) {
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
		_ = os.RemoveAll(dir)
	}
	for _, f := range p.Egress.Forwards {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(f.HostPort)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			return nil, fmt.Errorf("%w: publishing %s: %v; pick another host port with --publish HOST_PORT:%d", isolator.ErrProtection, addr, err, f.SandboxPort)
		}
		lns = append(lns, ln)
		sock := strconv.Itoa(int(f.SandboxPort)) + ".sock"
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				go func() {
					u, err := dialPublished(dirFD, sock)
					if err != nil {
						c.Close()
						return
					}
					shim.RelayConns(c, u)
				}()
			}
		}()
	}
	return stop, nil
}

// dialPublished connects to the sandbox's socket name in the publish directory dirFD
// without following a symlink: a sandboxed process can replace the socket with a
// link to a host socket (the Docker daemon's, say), which the host's relay would
// otherwise connect every visitor of the published port to.
func dialPublished(dirFD int, name string) (net.Conn, error) {
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
