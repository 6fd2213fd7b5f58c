package sshagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// The stream carries a sandbox's agent connections over one byte stream, for engines
// that cannot bind a socket of this host into the sandbox (Docker Desktop, a remote
// engine): an exec in the container (Carry, the sandbox's side) serves the socket the
// sandbox's SSH_AUTH_SOCK names and carries each connection over the exec's standard
// input and output, through the Engine API, to this host (ServeStream), where the
// filter decides as Relay's does.
//
// The stream opens with StreamHello, from the sandbox's side once it listens. Then
// either way it is records: a connection number (4 bytes, big-endian), then one whole
// agent message (its 4-byte length, then its contents) of at most MaxMessage bytes;
// a length of 0 ends that connection. The sandbox's side numbers its connections; a
// record of a number this host does not know opens one.
//
// The sandbox's side is the sandbox's: nothing it sends is trusted. ServeStream
// bounds every record as the relay bounds frames, serves at most MaxConns
// connections at once and queues at most streamQueue requests per connection (ssh
// and ssh-add wait for each answer); a malformed record ends the whole stream.

// StreamHello is what the sandbox's side writes first, once it listens.
const StreamHello = "dsbagent1\n"

// streamQueue bounds a connection's requests waiting for the agent.
const streamQueue = 8

const recordHeader = 4 + headerLen

// readRecord reads one record: its connection and its message (length included), or
// a nil message for the end of that connection.
func readRecord(r io.Reader) (uint32, []byte, error) {
	var h [recordHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	id, n := binary.BigEndian.Uint32(h[:4]), binary.BigEndian.Uint32(h[4:])
	if n == 0 {
		return id, nil, nil
	}
	if n > MaxMessage {
		return 0, nil, fmt.Errorf("%w: length %d", ErrFrame, n)
	}
	b := make([]byte, headerLen+int(n))
	copy(b, h[4:])
	if _, err := io.ReadFull(r, b[headerLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return id, b, nil
}

// recordWriter writes whole records to a stream, one at a time.
type recordWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write writes the record of connection id: msg, a whole message, or the end of the
// connection when msg is nil.
func (rw *recordWriter) write(id uint32, msg []byte) error {
	b := make([]byte, 4, 4+max(len(msg), headerLen))
	binary.BigEndian.PutUint32(b, id)
	if msg == nil {
		b = append(b, 0, 0, 0, 0)
	} else {
		b = append(b, msg...)
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	_, err := rw.w.Write(b)
	return err
}

// ServeStream serves the sandbox's agent connections carried on r (from the sandbox)
// and w (to it), relaying what the filter lets pass to the agent at upstream, one
// agent connection per sandbox connection, dialled on its first allowed request. It
// returns once r ends, or at the first malformed record (an error of class ErrFrame)
// or hello, after every connection's work ended and its agent connection closed.
// Closing r ends it.
func ServeStream(r io.Reader, w io.Writer, upstream string) error {
	hello := make([]byte, len(StreamHello))
	if _, err := io.ReadFull(r, hello); err != nil {
		return fmt.Errorf("the sandbox's side of the agent stream: %w", err)
	}
	if string(hello) != StreamHello {
		return fmt.Errorf("%w: the sandbox's side of the agent stream did not say hello", ErrFrame)
	}
	s := &stream{upstream: upstream, out: &recordWriter{w: w}, conns: map[uint32]*streamConn{}}
	err := s.serve(r)
	s.stop()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

type stream struct {
	upstream string
	out      *recordWriter
	mu       sync.Mutex
	conns    map[uint32]*streamConn
	// live counts the connections being answered, ended or not: one whose
	// exchange with the agent is in flight holds its place until it returns.
	live int
	done bool
	wg   sync.WaitGroup
}

// streamConn is one of the sandbox's connections: its requests, answered in turn.
type streamConn struct {
	reqs  chan []byte
	agent net.Conn // its agent connection, once dialled (guarded by stream.mu)
	ended bool
}

// endLocked ends c, connection id: no request more is queued, and an exchange in
// flight ends with its agent connection. s.mu is held.
func (s *stream) endLocked(id uint32, c *streamConn) {
	if s.conns[id] == c {
		delete(s.conns, id)
	}
	if c.ended {
		return
	}
	c.ended = true
	close(c.reqs)
	if c.agent != nil {
		c.agent.Close()
	}
}

func (s *stream) serve(r io.Reader) error {
	for {
		id, msg, err := readRecord(r)
		if err != nil {
			return err
		}
		s.mu.Lock()
		c, open := s.conns[id]
		switch {
		case msg == nil:
			if open {
				s.endLocked(id, c)
			}
			s.mu.Unlock()
		case open:
			select {
			case c.reqs <- msg:
				s.mu.Unlock()
			default:
				// Requests sent without waiting for answers: end the connection.
				s.endLocked(id, c)
				s.mu.Unlock()
				_ = s.out.write(id, nil)
			}
		case s.live >= MaxConns:
			s.mu.Unlock()
			_ = s.out.write(id, nil) // over MaxConns: the client sees the agent hang up
		default:
			c = &streamConn{reqs: make(chan []byte, streamQueue)}
			c.reqs <- msg
			s.conns[id] = c
			s.live++
			s.wg.Add(1)
			s.mu.Unlock()
			go s.answer(id, c)
		}
	}
}

// answer answers c's requests in turn until c ends (the sandbox ended it, or serve
// did), or the agent ends or answers a malformed message (c then ends here, and the
// sandbox is told).
func (s *stream) answer(id uint32, c *streamConn) {
	defer s.wg.Done()
	var agent net.Conn
	defer func() {
		if agent != nil {
			agent.Close()
		}
		s.mu.Lock()
		s.live--
		s.mu.Unlock()
	}()
	dial := func() (net.Conn, error) {
		a, err := net.Dial("unix", s.upstream)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.done || c.ended {
			a.Close()
			return nil, net.ErrClosed
		}
		c.agent = a
		return a, nil
	}
	for req := range c.reqs {
		resp, end := respond(req, &agent, dial)
		s.mu.Lock()
		ended := c.ended
		if end {
			// What the sandbox queued on c is dropped: nothing more reaches the agent.
			s.endLocked(id, c)
		}
		s.mu.Unlock()
		if resp != nil && !ended {
			_ = s.out.write(id, resp)
		}
		if end {
			if !ended {
				_ = s.out.write(id, nil)
			}
			return
		}
	}
}

// stop ends every connection (their agent connections close, which ends an exchange
// in flight) and returns once none is answered.
func (s *stream) stop() {
	s.mu.Lock()
	s.done = true
	for id, c := range s.conns {
		s.endLocked(id, c)
	}
	s.mu.Unlock()
	s.wg.Wait()
}
