package proxy

import (
	"sync"
	"sync/atomic"
)

// A decrypted HTTP/1.1 response is relayed one TLS record at a time: crypto/tls's Read
// returns one record's plaintext, and each write to the client became one record and
// one write to its socket, each read from the origin's socket one or two records. While
// a response body is relayed, the records sealed for the client are gathered and sent
// together right before the relay next reads the origin's socket, or the client's
// (readAhead, gathered), and when the response ends: a read that may wait never waits
// with a byte the origin sent held back, and a fast origin's records go in fewer,
// larger reads and writes.

// readAheadSize is how much of the origin's socket one read takes while a response is
// relayed: up to 16 records, handed to crypto/tls as it asks.
const readAheadSize = 256 << 10

// gatherLimit is the most a gathered write to the client carries.
const gatherLimit = 256 << 10

var readAheadBufs = sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}

// readAhead is the read side of an upstream connection (a checkedConn): while before is
// set, each read of the socket first calls it, and reads up to readAheadSize.
type readAhead struct {
	before atomic.Pointer[func() error]
	buf    *[]byte // nil when nothing is buffered and no hook is set
	r, w   int
	err    error // the socket's error, after buf[r:w]
}

// hook sets f to be called before every read of the socket, until unhook(f).
func (c *checkedConn) hook(f *func() error) { c.ra.before.Store(f) }

// unhook clears f, if it is the hook.
func (c *checkedConn) unhook(f *func() error) { c.ra.before.CompareAndSwap(f, nil) }

func (c *checkedConn) Read(p []byte) (int, error) {
	ra := &c.ra
	if ra.r < ra.w {
		n := copy(p, (*ra.buf)[ra.r:ra.w])
		ra.r += n
		if ra.r == ra.w {
			ra.release()
		}
		return n, nil
	}
	if ra.err != nil {
		err := ra.err
		ra.err = nil
		return 0, err
	}
	f := ra.before.Load()
	if f == nil {
		ra.release()
		return c.Conn.Read(p)
	}
	if err := (*f)(); err != nil {
		return 0, err
	}
	if len(p) >= readAheadSize {
		return c.Conn.Read(p)
	}
	if ra.buf == nil {
		ra.buf = readAheadBufs.Get().(*[]byte)
	}
	n, err := c.Conn.Read(*ra.buf)
	m := copy(p, (*ra.buf)[:n])
	ra.r, ra.w = m, n
	if m < n {
		ra.err = err
		return m, nil
	}
	ra.release()
	return m, err
}

func (ra *readAhead) release() {
	if ra.buf != nil && ra.before.Load() == nil {
		ra.r, ra.w = 0, 0
		readAheadBufs.Put(ra.buf)
		ra.buf = nil
	}
}

// gathering is the gather of one decrypted HTTP/1.1 response: its client's socket
// (batch, under the TLS the proxy speaks to the client) and the upstream connection
// the transport gave the request (up).
type gathering struct {
	batch *recordBatcher
	up    *checkedConn
	flush func() error
	on    bool
}

// start gathers the response's writes to the client, each gather sent before up's
// socket is read.
func (g *gathering) start() {
	if g == nil || g.up == nil || g.on {
		return
	}
	g.flush = g.batch.flush
	g.batch.hold()
	g.up.hook(&g.flush)
	g.on = true
}

// end sends what is gathered and stops gathering.
func (g *gathering) end() error {
	if g == nil || !g.on {
		return nil
	}
	g.on = false
	g.up.unhook(&g.flush)
	return g.batch.release()
}
