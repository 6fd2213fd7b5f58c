package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestMITMH2DataFrameOneWrite: a decrypted HTTP/2 download reaches the client one
// write of the connection per DATA frame. A full DATA frame (9 bytes of header and
// 16 KiB of payload) is 9 bytes more than a TLS record carries, so crypto/tls makes two
// records of it; the proxy sends both in one write rather than one write each (a
// system call each, and a 31-byte segment on the wire for every 16 KiB). The
// client's connection is a net.Pipe: every read of it returns the bytes of one write
// of the proxy, and nothing of the next.
func TestMITMH2DataFrameOneWrite(t *testing.T) {
	const size = 8 << 20
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
	})
	ln := newPipeListener()
	m.h.srv.Serve(ln)
	raw := &writeCounter{Conn: ln.dial(t)}
	c := h2RequestOn(t, m, raw, "example.com", "/large")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	frames, body := readH2Body(t, c)
	if body != size {
		t.Fatalf("the body is %d bytes, want %d", body, size)
	}
	writes, records := raw.counts()
	t.Logf("%d DATA frames, %d writes, %d TLS records of the proxy", frames, writes, records)
	// Beyond the DATA frames: the handshake's, SETTINGS, HEADERS and the like, and the
	// first 128 KiB of the connection, whose records crypto/tls keeps small.
	if slack := 32; writes > frames+slack {
		t.Errorf("the proxy wrote %d times for %d DATA frames: more than one write a frame (slack %d)", writes, frames, slack)
	}
}

// readH2Body reads c's frames up to the end of stream 1 and returns how many DATA
// frames of it came and their payload's length.
func readH2Body(t *testing.T, c io.Reader) (frames, body int) {
	t.Helper()
	br := bufio.NewReaderSize(c, 64<<10)
	hdr := make([]byte, 9)
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			t.Fatalf("after %d DATA frames, %d bytes: %v", frames, body, err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags, stream := hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&(1<<31-1)
		if _, err := br.Discard(n); err != nil {
			t.Fatalf("a frame of %d bytes: %v", n, err)
		}
		switch {
		case typ == 0x3 && stream == 1: // RST_STREAM
			t.Fatalf("the stream was reset after %d bytes", body)
		case typ == 0x7: // GOAWAY
			t.Fatalf("GOAWAY after %d bytes", body)
		case typ == 0x0 && stream == 1: // DATA
			frames++
			body += n
		}
		if stream == 1 && flags&0x1 != 0 && (typ == 0x0 || typ == 0x1) { // END_STREAM
			return frames, body
		}
	}
}

// writeCounter counts the writes that reach a net.Pipe's reader, and the TLS records
// in them.
type writeCounter struct {
	net.Conn
	mu      sync.Mutex
	big     []byte // larger than any one write: a read of the pipe returns all of it
	buf     []byte // the last write's bytes not yet read
	writes  int
	records int
	left    int // bytes of the current record still to come
	head    []byte
}

func (c *writeCounter) Read(p []byte) (int, error) {
	if len(c.buf) == 0 {
		if c.big == nil {
			c.big = make([]byte, 1<<20)
		}
		n, err := c.Conn.Read(c.big)
		if n == 0 {
			return 0, err
		}
		c.count(c.big[:n])
		c.buf = c.big[:n]
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *writeCounter) count(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	for len(b) > 0 {
		if c.left > 0 {
			k := min(c.left, len(b))
			c.left -= k
			b = b[k:]
			continue
		}
		k := min(5-len(c.head), len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
		if len(c.head) == 5 {
			c.records++
			c.left = int(binary.BigEndian.Uint16(c.head[3:]))
			c.head = c.head[:0]
		}
	}
}

func (c *writeCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.records, c.left, c.head = 0, 0, 0, c.head[:0]
}

func (c *writeCounter) counts() (writes, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.records
}

// pipeListener hands the Server the far ends of net.Pipes made by dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial(t *testing.T) net.Conn {
	t.Helper()
	near, far := net.Pipe()
	select {
	case l.conns <- far:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not accept the pipe")
	}
	t.Cleanup(func() { near.Close() })
	return near
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestMITMStalledOriginDeliversEveryByte is TestMITMStalledOriginDelivers over
// HTTP/1.1 and HTTP/2, with the origin stopping after a few bytes, after whole
// records, and after whole records and a few bytes more: every byte the origin sent
// reaches the client while the origin waits, nothing held back in a buffer for a write
// that does not come (neither a response writer's buffer of a sized body nor a
// writer gathering TLS records).
func TestMITMStalledOriginDeliversEveryByte(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		for _, first := range []int{100, 8 * mitmRecord, 8*mitmRecord + 5, 3*mitmRecord - 9} {
			const rest = 1 << 20
			received := make(chan struct{})
			m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(first+rest))
				w.Write(make([]byte, first))
				w.(http.Flusher).Flush()
				select {
				case <-received: // the client has the first part: send the rest
				case <-time.After(10 * time.Second):
					return // the client never got it: the body ends short
				}
				w.Write(make([]byte, rest))
			})
			resp, err := m.client(t, h2).Get("https://example.com/stall")
			if err != nil {
				t.Fatalf("h2=%v first %d: %v", h2, first, err)
			}
			if got := resp.ProtoMajor == 2; got != h2 {
				t.Fatalf("the client spoke %s to the proxy, want h2=%v", resp.Proto, h2)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, first)); err != nil {
				t.Fatalf("h2=%v first %d: the first part: %v", h2, first, err)
			}
			close(received)
			if n, err := io.Copy(io.Discard, resp.Body); n != rest || err != nil {
				t.Errorf("h2=%v first %d: the rest: %d bytes, %v", h2, first, n, err)
			}
			resp.Body.Close()
		}
	}
}

// TestMITMStreamedLargeEventsH2: a stream of events larger than a TLS record, each
// flushed by the origin, which sends the next only once the client has the last,
// reaches an HTTP/2 client event by event.
func TestMITMStreamedLargeEventsH2(t *testing.T) {
	const events, size = 4, 40000 // more than two records' worth each, not a multiple
	next := make(chan struct{})
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := make([]byte, size)
		for i := range ev {
			ev[i] = 'x'
		}
		copy(ev[len(ev)-2:], "\n\n")
		for range events {
			w.Write(ev)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	})
	resp, err := m.client(t, true).Get("https://example.com/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the client spoke %s to the proxy, want HTTP/2", resp.Proto)
	}
	for i := range events {
		got := make(chan error, 1)
		go func() { _, err := io.ReadFull(resp.Body, make([]byte, size)); got <- err }()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d did not arrive whole before the origin sent more", i)
		}
		next <- struct{}{}
	}
}

// h2RequestOn is h2Request on a connection the caller made to the proxy.
func h2RequestOn(t *testing.T, m *mitmSetup, raw net.Conn, host, path string) *tls.Conn {
	t.Helper()
	if _, err := io.WriteString(raw, "CONNECT "+host+":443 HTTP/1.1\r\nHost: "+host+":443\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil) // the proxy sends nothing before the client's first byte
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if wc, ok := raw.(*writeCounter); ok {
		wc.reset() // the TLS records begin here
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: host, NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("the proxy negotiated %q, want h2", p)
	}
	if _, err := c.Write(h2Get(host, path)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMITMH2ProhibitedSuiteRefused: a client that negotiates HTTP/2 over a TLS 1.2
// cipher suite HTTP/2 prohibits (CBC) gets no answer and its request reaches no host,
// as net/http's HTTP/2 server would have it (INADEQUATE_SECURITY); a TLS 1.2 client on
// an AEAD suite is served.
func TestMITMH2ProhibitedSuiteRefused(t *testing.T) {
	m := newMITM(t, Config{}, nil)
	for _, tc := range []struct {
		suites []uint16
		served bool
	}{
		{[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}, false},
		{[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, true},
	} {
		raw, err := net.Dial("unix", m.h.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		io.WriteString(raw, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(raw), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(m.ca.CertPEM)
		c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "example.com", NextProtos: []string{"h2"},
			MaxVersion: tls.VersionTLS12, CipherSuites: tc.suites})
		if err := c.Handshake(); err != nil {
			t.Fatalf("suites %x: the handshake: %v", tc.suites, err)
		}
		if cs := c.ConnectionState(); cs.NegotiatedProtocol != "h2" {
			t.Fatalf("suites %x: negotiated %q", tc.suites, cs.NegotiatedProtocol)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(h2Get("example.com", "/suite"))
		headers := false
		br := bufio.NewReader(c)
		hdr := make([]byte, 9)
		for !headers {
			if _, err := io.ReadFull(br, hdr); err != nil {
				break // closed
			}
			n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
			br.Discard(n)
			headers = hdr[3] == 0x1 && binary.BigEndian.Uint32(hdr[5:]) == 1
		}
		if headers != tc.served {
			t.Errorf("suites %x: answered %v, want %v", tc.suites, headers, tc.served)
		}
		c.Close()
	}
	if got := m.origin.hits.Load(); got != 1 {
		t.Errorf("the origin had %d requests, want 1 (the AEAD client's)", got)
	}
}
