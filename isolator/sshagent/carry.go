package sshagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/devsandbox/devsandbox/internal/accept"
)

// Carry is the sandbox's side of the agent stream (see ServeStream): it says
// StreamHello on w, then carries every connection ln accepts as records, each
// message read whole (bounded as the relay bounds them), to w, and the records read
// from r back to their connections. It returns once r ends (this host ended the
// session, or is gone), or at a malformed record, with every connection and ln
// closed. It decides nothing: the filter is on the host.
func Carry(ln net.Listener, r io.Reader, w io.Writer) error {
	out := &recordWriter{w: w}
	if _, err := io.WriteString(w, StreamHello); err != nil {
		ln.Close()
		return err
	}
	c := &carrier{out: out, conns: map[uint32]net.Conn{}}
	c.wg.Add(1)
	go c.accept(ln)
	err := c.back(r)
	ln.Close()
	c.mu.Lock()
	c.done = true
	for _, conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

type carrier struct {
	out   *recordWriter
	mu    sync.Mutex
	conns map[uint32]net.Conn
	next  uint32
	done  bool
	wg    sync.WaitGroup
}

func (c *carrier) accept(ln net.Listener) {
	defer c.wg.Done()
	accept.Loop(ln, func(conn net.Conn) bool {
		c.mu.Lock()
		if c.done {
			c.mu.Unlock()
			conn.Close()
			return false
		}
		c.next++
		id := c.next
		c.conns[id] = conn
		c.wg.Add(1)
		c.mu.Unlock()
		go c.carry(id, conn)
		return true
	})
}

// carry sends conn's messages until it ends, then its end.
func (c *carrier) carry(id uint32, conn net.Conn) {
	defer c.wg.Done()
	for {
		msg, err := readFrame(conn)
		if err != nil {
			break
		}
		if err := c.out.write(id, msg); err != nil {
			break
		}
	}
	c.mu.Lock()
	_, open := c.conns[id]
	delete(c.conns, id)
	c.mu.Unlock()
	conn.Close()
	if open {
		_ = c.out.write(id, nil)
	}
}

// back hands the records read from r to their connections: a message is written to
// it, an end closes it.
func (c *carrier) back(r io.Reader) error {
	for {
		id, msg, err := readRecord(r)
		if err != nil {
			return err
		}
		c.mu.Lock()
		conn := c.conns[id]
		if msg == nil {
			delete(c.conns, id)
		}
		c.mu.Unlock()
		switch {
		case conn == nil:
		case msg == nil:
			conn.Close()
		default:
			if _, err := conn.Write(msg); err != nil {
				conn.Close()
			}
		}
	}
}

// ListenCarried listens on the Unix socket path for Carry, every user allowed in (the
// caller runs as another user than the sandbox's, in a directory only it can write):
// whatever is at path (a socket a session left) is removed first, without following
// it.
func ListenCarried(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// CarryArg, followed by the socket's path, is devsandbox-init's argument for the
// sandbox's side of the agent stream: the docker isolator execs it in the container.
const CarryArg = "--agent-mux="

// CarryMain listens on path (ListenCarried) and carries its connections over stdin
// and stdout (Carry) until stdin ends, then removes the socket. It returns the exit
// status: 0, or 1 after a message on stderr.
func CarryMain(path string, stdin io.Reader, stdout, stderr io.Writer) int {
	ln, err := ListenCarried(path)
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-init: serving the ssh agent at %s: %v\n", path, err)
		return 1
	}
	err = Carry(ln, stdin, stdout)
	_ = os.Remove(path)
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-init: the ssh agent's stream: %v\n", err)
		return 1
	}
	return 0
}
