package engineaddr

import (
	"errors"
	"os"
	"sync"
)

// pinned is the engine's Unix socket as Pin opened it: the file held open (O_PATH),
// the path that names that very socket (/proc/self/fd/N) and what the listener
// check found there, asked once, on that socket.
type pinned struct {
	f    *os.File
	path string
	once sync.Once
	peer peer
}

// Pinned reports whether a's engine socket is pinned (Pin): every connection to it
// goes to the socket that was checked.
func (a Address) Pinned() bool { return a.pin != nil }

// DialPath is the path to connect to for a Unix-socket engine: the pinned socket's
// /proc/self/fd path when a is pinned, else the socket's path; "" for another
// address.
func (a Address) DialPath() string {
	if a.pin != nil {
		return a.pin.path
	}
	if sock, ok := unixSocket(a.Host); ok {
		return sock
	}
	return ""
}

// peerOf asks who listens on the pinned socket, once.
func (p *pinned) peerOf(sock, proc string) peer {
	p.once.Do(func() { p.peer = askPeer(p.path, sock, proc) })
	return p.peer
}

// ErrPlanted is wrapped when the process listening on a unix:// engine address's
// socket is one of this user's that runs in another root directory: a sandbox's.
var ErrPlanted = errors.New("not an engine's listener")

// ErrNotSocket is wrapped when the path of a unix:// engine address is not a socket.
var ErrNotSocket = errors.New("not a socket")
