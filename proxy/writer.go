package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// responseWriter counts response body bytes and the status for the audit record, and
// hands over hijacked connections (CONNECT, WebSocket) with any bytes the server had
// already buffered, registered with the tracker so Shutdown can close them.
type responseWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	idle     time.Duration // a write to the client may block this long
	deadline time.Time     // the write deadline refresh last set; zero: none
	ex       *exchange
	track    *tracker
	wrote    bool
	hijacked net.Conn      // removed from the tracker when the handler returns
	spliced  *atomic.Int64 // body bytes relayBody moved; nil: not counted
}

// newResponseWriter clears any write deadline a previous response on the connection
// left; each body write then gets idle to complete, so a client that stops reading
// cannot hold the handler forever.
func newResponseWriter(w http.ResponseWriter, ex *exchange, track *tracker, idle time.Duration) *responseWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	return &responseWriter{ResponseWriter: w, rc: rc, idle: idle, ex: ex, track: track}
}

func (w *responseWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 && w.ex != nil {
		// An informational response (103 Early Hints) carries the upstream's headers
		// before the final one, which ModifyResponse never sees: masked here.
		if a := w.ex.appliedCreds(); a != nil {
			a.redactHeader(w.Header())
		}
	}
	// An informational response comes before the final one, which is the one recorded
	// (101 Switching Protocols is final).
	if !w.wrote && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.wrote = true
		w.ex.setStatus(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.refresh()
	n, err := w.ResponseWriter.Write(p)
	w.count(int64(n))
	return n, err
}

// count adds n body bytes that reached the client to the record, unless the proxy
// made the response itself.
func (w *responseWriter) count(n int64) {
	if !w.ex.local.Load() {
		w.ex.down.Add(n)
	}
}

// refresh gives the next write to the client at least the idle time to complete. It
// moves the deadline only when less than that is left, to idle and an eighth from now:
// a relayed body is written one TLS record (16 KiB) at a time, and each new deadline
// costs a lock and a timer change, so a fast download sets one every idle/8 instead
// of one per record. A client that stops reading holds the handler at most 9/8 idle.
func (w *responseWriter) refresh() {
	now := time.Now()
	if w.deadline.Sub(now) >= w.idle {
		return
	}
	w.deadline = now.Add(w.idle + w.idle/8)
	_ = w.rc.SetWriteDeadline(w.deadline)
}

func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack returns the client connection. Bytes the client sent early (a ClientHello in
// the same write as CONNECT) sit in the server's buffer; the returned conn reads them
// first, and the returned reader is empty so no caller reads them twice.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := w.rc.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if n := rw.Reader.Buffered(); n > 0 {
		early, _ := rw.Reader.Peek(n)
		c = &bufferedConn{Conn: c, early: bytes.Clone(early)}
	}
	w.hijacked = c
	w.track.addConn(c)
	return c, bufio.NewReadWriter(bufio.NewReader(c), rw.Writer), nil
}

// bufferedConn is a hijacked conn whose reads start with bytes already buffered.
type bufferedConn struct {
	net.Conn
	early []byte // read before Conn
}

func (c *bufferedConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// countingBody counts request body bytes read by the upstream transport.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// copyBufSize is the buffer a response body is copied through. Larger than io.Copy's
// 32 KiB: each chunk costs a read, a write and a deadline, and a fast upstream hands
// over far more than 32 KiB per read.
const copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// ReadFrom relays a response body to the client: a sized body from an owned upstream
// connection by splice where the client is a TCP socket (relayBody), any other through
// a pooled buffer of copyBufSize, each chunk through Write (counted, under the write
// deadline).
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	if b, ok := r.(*upBody); ok {
		if n, ok, err := w.relayBody(b); ok {
			return n, err
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(writerOnly{w}, r, *bp)
}

// writerOnly hides ReadFrom so io.CopyBuffer uses the buffer it is given.
type writerOnly struct{ io.Writer }
