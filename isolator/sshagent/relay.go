package sshagent

import (
	"net"
	"os"
	"sync"

	"github.com/devsandbox/devsandbox/internal/accept"
)

// MaxConns bounds the sandbox's connections open at once: each holds a descriptor of
// devsandbox's (two once it reached the agent), and a sandbox must not run the
// session's host side out of them. ssh and ssh-add use one at a time.
const MaxConns = 64

// Relay serves a listener whose every connection is relayed, request by request, to
// the agent at Upstream: each request is read whole (readFrame), one Allowed passes
// and the agent's answer comes back unchanged; any other is answered
// SSH_AGENT_FAILURE here. A malformed frame, either way, closes the connection. The
// agent is dialled on a connection's first allowed request, one agent connection per
// sandbox connection (session-bind@openssh.com binds the agent connection).
type Relay struct {
	Upstream string // the agent's socket
	// Key, when set (ProbeKeyLen bytes), makes the relay answer ProbeExt requests
	// itself: how devsandbox-init proves a socket bound into a container is this
	// relay.
	Key []byte

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// open counts the sandbox's connections being served (conns also holds the
	// agent's).
	open int
	done bool
	wg   sync.WaitGroup
}

// Start serves ln, relaying to the agent at upstream, until Stop; key is Relay.Key.
func Start(ln net.Listener, upstream string, key []byte) *Relay {
	r := &Relay{Upstream: upstream, Key: key, ln: ln, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r
}

func (r *Relay) accept() {
	defer r.wg.Done()
	accept.Loop(r.ln, func(c net.Conn) bool {
		switch ok, full := r.track(c); {
		case !ok:
			c.Close()
			return false
		case full:
			c.Close() // over MaxConns: the client sees the agent hang up
			return true
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.served(c)
			r.serve(c)
		}()
		return true
	})
}

// track records c, a sandbox's connection to close on Stop: ok is false once
// stopped, full when MaxConns are open already (c is then not recorded).
func (r *Relay) track(c net.Conn) (ok, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return false, false
	}
	if r.open >= MaxConns {
		return true, true
	}
	r.open++
	r.conns[c] = struct{}{}
	return true, false
}

// served forgets and closes c, a sandbox's connection.
func (r *Relay) served(c net.Conn) {
	r.mu.Lock()
	r.open--
	r.mu.Unlock()
	r.untrack(c)
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// serve relays c's requests until c or the agent ends, or a frame is malformed.
func (r *Relay) serve(c net.Conn) {
	var agent net.Conn
	defer func() {
		if agent != nil {
			r.untrack(agent)
		}
	}()
	dial := func() (net.Conn, error) {
		a, err := net.Dial("unix", r.Upstream)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.done {
			a.Close()
			return nil, net.ErrClosed
		}
		r.conns[a] = struct{}{}
		return a, nil
	}
	for {
		req, err := readFrame(c)
		if err != nil {
			return
		}
		var resp []byte
		end := false
		if probe, ours := isProbe(req, r.Key); probe && r.Key != nil {
			resp = failure
			if ours {
				resp = probeResponse(r.Key)
			}
		} else {
			resp, end = respond(req, &agent, dial)
		}
		if resp != nil {
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
		if end {
			return
		}
	}
}

// respond answers req, a whole request: SSH_AGENT_FAILURE, without reaching the
// agent, unless Allowed passes it; else the agent's answer, on *agent, which dial
// makes on the first need. end: the connection ends (after resp, when not nil),
// because the agent cannot be reached (the answer is then SSH_AGENT_FAILURE, as
// ssh's own forwarding answers), ended, or answered a malformed message.
func respond(req []byte, agent *net.Conn, dial func() (net.Conn, error)) (resp []byte, end bool) {
	if !Allowed(req[headerLen:]) {
		return failure, false
	}
	if *agent == nil {
		a, err := dial()
		if err != nil {
			return failure, true
		}
		*agent = a
	}
	if _, err := (*agent).Write(req); err != nil {
		return nil, true
	}
	resp, err := readFrame(*agent)
	if err != nil {
		return nil, true
	}
	return resp, false
}

// Stop closes the listener and every connection, either side, and returns once
// nothing of the relay runs. The socket file is the caller's to remove.
func (r *Relay) Stop() {
	r.ln.Close()
	r.mu.Lock()
	r.done = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// Serve listens on the Unix socket path with listen (sockdir.Listen: mode 0600,
// linked into place already accepting) and relays to the agent at upstream, answering
// probes with key (Relay.Key; nil: none). The returned stop stops the relay and
// removes the socket.
func Serve(path, upstream string, key []byte, listen func(string) (*net.UnixListener, error)) (stop func(), err error) {
	ln, err := listen(path)
	if err != nil {
		return nil, err
	}
	r := Start(ln, upstream, key)
	return func() {
		r.Stop()
		_ = os.Remove(path)
	}, nil
}
