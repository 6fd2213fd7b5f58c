package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of the upstream pool, as the transport's were.
const (
	maxIdlePerHost = 8
	maxIdle        = 64
)

// upstream sends plain http:// requests without a body on connections the handler
// owns: it dials (through the checked dial, which decides and records) or takes a kept
// connection, writes the request and reads the response head in the handler's own
// goroutine. http.Transport hands each request between the handler, a dialer, a read
// loop and a write loop goroutine; on a small machine each hand-off is a thread
// wake-up, and they were most of a small request's added latency.
//
// Kept connections are pooled by the host and port the request named, never by
// address: a host the policy refuses that resolves to the same address as an allowed
// one never reaches a connection dialed for the allowed one. A connection is kept only
// after a response read to its end with nothing more buffered, and only while idle
// less than the server's idle timeout.
type upstream struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // checked
	idle time.Duration

	mu     sync.Mutex
	pool   map[string][]*upConn // by "host:port" as asked
	n      int                  // connections in pool
	closed bool
}

// upConn is an upstream connection and its reader; decision allowed it.
type upConn struct {
	conn     net.Conn
	br       *bufio.Reader
	decision Decision
	key      string
	timer    *time.Timer // closes it when it idles too long in the pool
}

// sendsDirect reports whether upstream carries req: plain http://, a method a retry
// cannot repeat harmfully, no body, no protocol upgrade. Others go through the
// transport.
func sendsDirect(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return req.URL.Scheme == "http" && (req.Body == nil || req.Body == http.NoBody) &&
		req.Header.Get("Upgrade") == ""
}

// roundTrip sends req and returns the response head; its body is upstream's (see
// upBody). A kept connection the server has closed meanwhile is retried once on a new
// one, before any byte of a response was read.
func (u *upstream) roundTrip(req *http.Request, ex *exchange) (*http.Response, error) {
	key := hostPort(normalizeHost(req.URL.Hostname()), ex.port)
	for {
		uc, reused, err := u.get(req.Context(), key)
		if err != nil {
			return nil, err
		}
		if reused {
			ex.decide(uc.decision, nil)
		}
		resp, err := u.exchange(req, uc)
		if err != nil {
			uc.conn.Close()
			if reused && errors.Is(err, errStale) {
				continue
			}
			return nil, err
		}
		return resp, nil
	}
}

// errStale marks a failure before the response began; on a kept connection it means
// the server closed it meanwhile.
var errStale = errors.New("upstream connection ended before the response")

func (u *upstream) exchange(req *http.Request, uc *upConn) (*http.Response, error) {
	stop := context.AfterFunc(req.Context(), func() { _ = uc.conn.SetDeadline(time.Unix(1, 0)) })
	bw := bufio.NewWriterSize(uc.conn, 4<<10)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = uc.br.Peek(1)
	}
	if err != nil {
		stop()
		if !isTimeout(err) {
			err = fmt.Errorf("%w: %w", errStale, err) // retried only on a kept connection
		}
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(uc.br, req)
		if err != nil {
			stop()
			return nil, err
		}
		// 1xx informational answers (100 Continue, 103 Early Hints) precede the response.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		keep := resp.StatusCode >= 200 && !resp.Close && !req.Close
		b := &upBody{rc: resp.Body, uc: uc, u: u, keep: keep, stop: stop}
		if resp.ContentLength > 0 && resp.Body != http.NoBody && len(resp.TransferEncoding) == 0 {
			// A sized body: upBody reads it itself, so it can also be spliced (relayBody).
			b.rc, b.left = nil, resp.ContentLength
		}
		resp.Body = b
		return resp, nil
	}
}

// get takes a kept connection for key or dials a new one.
func (u *upstream) get(ctx context.Context, key string) (*upConn, bool, error) {
	u.mu.Lock()
	for cs := u.pool[key]; len(cs) > 0; cs = u.pool[key] {
		uc := cs[len(cs)-1]
		u.pool[key] = cs[:len(cs)-1]
		u.n--
		if uc.timer.Stop() {
			u.mu.Unlock()
			return uc, true, nil
		}
		// its idle timer fired: it is being closed
	}
	u.mu.Unlock()
	c, err := u.dial(ctx, "tcp", key)
	if err != nil {
		return nil, false, err
	}
	uc := &upConn{conn: c, br: bufio.NewReaderSize(c, 16<<10), key: key}
	if cc, ok := c.(*checkedConn); ok {
		uc.decision = cc.decision
	}
	return uc, false, nil
}

// put keeps uc for its key, or closes it when the pool is full or closed.
func (u *upstream) put(uc *upConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || u.n >= maxIdle || len(u.pool[uc.key]) >= maxIdlePerHost || uc.br.Buffered() > 0 {
		uc.conn.Close()
		return
	}
	if u.pool == nil {
		u.pool = map[string][]*upConn{}
	}
	u.pool[uc.key] = append(u.pool[uc.key], uc)
	u.n++
	if uc.timer == nil {
		uc.timer = time.AfterFunc(u.idle, func() { u.expire(uc) })
	} else {
		uc.timer.Reset(u.idle)
	}
}

// expire drops uc from the pool, where its idle timer found it, and closes it.
func (u *upstream) expire(uc *upConn) {
	u.mu.Lock()
	cs := u.pool[uc.key]
	for i, c := range cs {
		if c == uc {
			u.pool[uc.key] = append(cs[:i], cs[i+1:]...)
			u.n--
			break
		}
	}
	u.mu.Unlock()
	uc.conn.Close()
}

// closeIdle closes every kept connection; after close, later releases close theirs.
func (u *upstream) closeIdle(final bool) {
	u.mu.Lock()
	pool := u.pool
	u.pool, u.n = nil, 0
	u.closed = u.closed || final
	u.mu.Unlock()
	for _, cs := range pool {
		for _, uc := range cs {
			uc.timer.Stop()
			uc.conn.Close()
		}
	}
}

// upBody is a response body on an owned connection: read to its end, the connection
// goes back to the pool when the response allows; closed early, it is closed (never
// drained: the client may have left a large download). A body with a Content-Length
// is read by upBody itself (rc nil, left the bytes still to come), straight from the
// connection once the reader's buffer is empty, so relayBody can splice it.
type upBody struct {
	rc   io.ReadCloser // the body as net/http frames it; nil for a sized body
	left int64         // a sized body: bytes not yet read
	uc   *upConn
	u    *upstream
	keep bool
	stop func() bool // ends the request context's hold on the connection
	eof  bool
	done bool
}

func (b *upBody) Read(p []byte) (int, error) {
	if b.rc == nil {
		return b.readSized(p)
	}
	n, err := b.rc.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

func (b *upBody) readSized(p []byte) (int, error) {
	if b.left == 0 {
		b.eof = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.uc.br.Read(p)
	b.left -= int64(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // the connection ended before the declared length
	}
	return n, err
}

func (b *upBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	held := b.stop() // false: the request was cancelled and the deadline set
	if b.eof && b.keep && held {
		if b.rc != nil {
			b.rc.Close() // at EOF: reads nothing more
		}
		b.u.put(b.uc)
		return nil
	}
	b.uc.conn.Close()
	if b.rc != nil {
		b.rc.Close()
	}
	return nil
}
