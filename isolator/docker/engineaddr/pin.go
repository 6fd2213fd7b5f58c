package engineaddr

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
)

// pinned is the engine's Unix socket as Pin opened it: the file held open (O_PATH),
// the path that names that very socket (/proc/self/fd/N) and what the listener
// check found there, asked once, on that socket.
//
// Every copy of an Address shares its pin: Unpin closes the socket for all of them.
// mu is held for reading while the path is used (a connection, a stat, the listener
// check), so the descriptor is never closed, and its number taken by another file,
// between reading the path and using it.
type pinned struct {
	mu     sync.RWMutex
	f      *os.File // nil once closed (Unpin)
	path   string
	once   sync.Once
	peer   peer
	closed bool
}

// Pinned reports whether a's engine socket is pinned (Pin): every connection to it
// goes to the socket that was checked.
func (a Address) Pinned() bool { return a.pin != nil }

// DialPath is the path to connect to for a Unix-socket engine: the pinned socket's
// /proc/self/fd path when a is pinned, else the socket's path; "" for another
// address, and for a pin that was closed (Unpin): its number may name another file
// by then. Use it at once; a connection goes through DialUnix, which holds the pin
// open while it connects.
func (a Address) DialPath() string {
	if a.pin != nil {
		a.pin.mu.RLock()
		defer a.pin.mu.RUnlock()
		if a.pin.closed {
			return ""
		}
		return a.pin.path
	}
	if sock, ok := unixSocket(a.Host); ok {
		return sock
	}
	return ""
}

// ErrUnpinned is wrapped when a connection is asked of an address whose pin was
// closed (Unpin).
var ErrUnpinned = errors.New("the engine's pinned socket was closed")

// DialUnix connects to a's Unix socket: the pinned one when a is pinned (refused with
// ErrUnpinned once Unpin closed it), else the path.
func (a Address) DialUnix(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	if a.pin == nil {
		return d.DialContext(ctx, "unix", a.DialPath())
	}
	a.pin.mu.RLock()
	defer a.pin.mu.RUnlock()
	if a.pin.closed {
		return nil, ErrUnpinned
	}
	return d.DialContext(ctx, "unix", a.pin.path)
}

// Unpin closes a's pinned socket (every copy of a shares it), when its client and
// checks are done: a library that makes many runs holds no descriptor per run until
// the garbage collector comes. What the listener check found stays (Local,
// HostNetwork, LocalWhy answer as before when they were asked before; asked for the
// first time after, they find no listener). Later connections fail (ErrUnpinned).
// Safe to call more than once, and on an unpinned address.
func (a Address) Unpin() {
	if a.pin == nil {
		return
	}
	a.pin.mu.Lock()
	defer a.pin.mu.Unlock()
	if !a.pin.closed {
		a.pin.closed = true
		a.pin.f.Close()
	}
}

// TryPin is a pinned when its socket can be pinned (Pin), else a as it is (Local by
// its form): for a judgement that is not a connection (where the home is, whether a
// run pins sources), whose run pins again and says why it cannot. The caller Unpins
// it when done.
func (a Address) TryPin() Address {
	if p, err := a.Pin(); err == nil {
		return p
	}
	return a
}

// peerOf asks who listens on the pinned socket, once.
func (p *pinned) peerOf(sock, proc string) peer {
	p.once.Do(func() {
		p.mu.RLock()
		defer p.mu.RUnlock()
		if p.closed {
			p.peer = peer{net: Network{Why: "the pinned socket was closed before its listener was asked"}, who: "the pinned socket was closed before its listener was asked"}
			return
		}
		p.peer = askPeer(p.path, sock, proc)
	})
	return p.peer
}

// engineProcess is the name (/proc/PID/comm) of the process that serves a Docker
// engine's API itself.
const engineProcess = "dockerd"

// podmanService is the name (/proc/PID/comm) of podman's Docker-compatible API
// service (podman system service, or podman.socket's): podman itself listens, not
// conmon.
const podmanService = "podman"

// PodmanService reports whether the process listening on a's pinned socket is
// podman's Docker-compatible API service (its name is podman's), whose API the docker
// isolator does not speak. False for an unpinned address. The name is the process's
// own choice: a process that calls itself podman only has the run refused.
func (a Address) PodmanService() bool {
	sock, ok := unixSocket(a.Host)
	return ok && a.pin != nil && a.pin.peerOf(sock, "/proc").name == podmanService
}

// ErrPlanted is wrapped when the process listening on a unix:// engine address's
// socket is one of this user's that runs in another root directory: a sandbox's.
var ErrPlanted = errors.New("not an engine's listener")

// ErrNotSocket is wrapped when the path of a unix:// engine address is not a socket.
var ErrNotSocket = errors.New("not a socket")

// EngineListens reports whether the process listening on a's pinned socket is dockerd
// itself (its name; another user's, or this user's in this root directory: Pin
// refuses the others), whose API is Docker's. False for an unpinned address and any
// other listener (systemd's socket activation may hand the socket to podman).
func (a Address) EngineListens() bool {
	sock, ok := unixSocket(a.Host)
	return ok && a.pin != nil && a.pin.peerOf(sock, "/proc").name == engineProcess
}
