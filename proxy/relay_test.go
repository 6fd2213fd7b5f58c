package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// dialTCP opens a raw connection to the proxy's TCP endpoint: the listener a sandbox
// reaches, and the one whose response bodies are spliced.
func (h *harness) dialTCP(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", h.tcp)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// getRaw writes a plain proxy GET for u on c with the session credential.
func (h *harness) getRaw(t *testing.T, c net.Conn, u string) {
	t.Helper()
	req := "GET " + u + " HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: " + h.authHeader() + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
}

// sized serves body with its Content-Length, the framing a body is spliced under.
func sized(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// A client that asks for a large body and never reads it does not hold the handler:
// a write to it times out after the idle timeout, whether the body is spliced or
// copied, the handler ends then, and the request is recorded with the bytes that did
// go out.
func TestForwardStalledReaderTimesOut(t *testing.T) {
	const size = 512 << 20 // more than any socket buffers hold
	const idle = 300 * time.Millisecond
	const bound = idle + idle/8 + time.Second // see TestMITMStalledReaderTimesOut
	o := newOrigin(t, false, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := make([]byte, 1<<20)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"),
		TunnelIdleTimeout: idle,
	})
	c := h.dialTCP(t)
	start := time.Now()
	h.getRaw(t, c, "http://origin.test:"+o.port()+"/big")
	if !eventually(t, 15*time.Second, func() bool { return o.hits.Load() == 1 }) {
		t.Fatal("the origin never had the request")
	}
	endsWithin(t, h, start, bound, "a client that never reads the response it asked for")
	ctxShutdown(t, h)
	recs := readRecords(t, h.logFile(t))
	if len(recs) != 1 || recs[0].Status != 200 || recs[0].BytesDown <= 0 || recs[0].BytesDown >= size {
		t.Fatalf("records %+v, want one 200 with part of the body", recs)
	}
}

// Content-Length bodies reach a TCP client intact on one kept-alive client and upstream
// connection, by splice past the bytes buffered with the head; chunked ones by copy.
// Each record counts exactly the body bytes.
func TestForwardSplicedBodyCounts(t *testing.T) {
	big := make([]byte, 3<<20+7)
	rand.Read(big)
	small := []byte("0123456789")
	o := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			sized(big)(w, r)
		case "/small":
			sized(small)(w, r)
		default: // chunked
			_, _ = w.Write(big[:100000])
			w.(http.Flusher).Flush()
			_, _ = w.Write(big[100000:200000])
		}
	})
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	c := h.dialTCP(t)
	br := bufio.NewReader(c)
	base := "http://origin.test:" + o.port()
	cases := []struct {
		path string
		want []byte
	}{{"/big", big}, {"/small", small}, {"/chunked", big[:200000]}, {"/big", big}}
	before := h.srv.spliced.Load()
	for _, cs := range cases {
		h.getRaw(t, c, base+cs.path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, cs.want) {
			t.Fatalf("GET %s: %d, %d bytes (%v), want %d bytes intact", cs.path, resp.StatusCode, len(got), err, len(cs.want))
		}
	}
	if n := o.hits.Load(); n != int64(len(cases)) {
		t.Errorf("origin served %d requests, want %d", n, len(cases))
	}
	c.Close()
	// The handler counts what it spliced when its relay returns, which can be after
	// the client has read the last byte: read the count once every handler is done.
	ctxShutdown(t, h)
	// Each big body is spliced but for what the upstream reader (16 KiB,
	// upstream.get) held with the head; the small and the chunked ones are copied.
	if n, low := h.srv.spliced.Load()-before, 2*int64(len(big)-16<<10); n < low || n > 2*int64(len(big)) {
		t.Errorf("%d bytes spliced, want both %d-byte bodies but the reader's buffer: %d to %d", n, len(big), low, 2*len(big))
	}
	recs := readRecords(t, h.logFile(t))
	if len(recs) != len(cases) {
		t.Fatalf("%d records, want %d", len(recs), len(cases))
	}
	for i, cs := range cases {
		if recs[i].Path != cs.path || recs[i].BytesDown != int64(len(cs.want)) {
			t.Errorf("record %d: %s down %d, want %s down %d", i, recs[i].Path, recs[i].BytesDown, cs.path, len(cs.want))
		}
	}
}

// An origin that ends a Content-Length body early: the client gets every byte the
// origin sent and then the end of the connection, the record counts those bytes, and
// the upstream connection is not kept (the next request dials a new one).
func TestForwardSplicedOriginEndsEarly(t *testing.T) {
	const declared, sent = 10 << 20, 3<<20 + 5
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepts := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts <- struct{}{}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(declared)+"\r\n\r\n")
				_, _ = c.Write(make([]byte, sent))
			}()
		}
	}()
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	u := "http://origin.test:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/x"
	for i := 0; i < 2; i++ {
		c := h.dialTCP(t)
		h.getRaw(t, c, u)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", resp, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		if n != sent || err == nil {
			t.Fatalf("read %d bytes, %v; want %d and an unexpected end", n, err, sent)
		}
		c.Close()
	}
	if len(accepts) != 2 {
		t.Errorf("%d upstream connections, want 2: a truncated one was kept", len(accepts))
	}
	ctxShutdown(t, h)
	recs := readRecords(t, h.logFile(t))
	if len(recs) != 2 || recs[0].BytesDown != sent || recs[1].BytesDown != sent {
		t.Fatalf("records %+v, want two with %d bytes down", recs, sent)
	}
}

// A spliced download that takes longer than the idle timeout in all, to a client that
// reads steadily, completes: each chunk gets its own write deadline.
func TestForwardSplicedSlowReaderCompletes(t *testing.T) {
	const idle = time.Second
	body := make([]byte, 24<<20)
	rand.Read(body)
	o := newOrigin(t, false, sized(body))
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"),
		TunnelIdleTimeout: idle,
	})
	c := h.dialTCP(t)
	h.getRaw(t, c, "http://origin.test:"+o.port()+"/big")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	start := time.Now()
	got := bytes.NewBuffer(make([]byte, 0, len(body))) // no pause to grow it
	for {
		// about 2 s for the whole body, never long without reading
		n, err := io.CopyN(got, resp.Body, 256<<10)
		if err != nil || n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond) // the client's pace, not synchronisation
	}
	if !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("received %d bytes in %v, want %d intact", got.Len(), time.Since(start), len(body))
	}
	if time.Since(start) < idle {
		t.Fatalf("the download took %v: not longer than the idle timeout, proves nothing", time.Since(start))
	}
}

// An origin that pauses for less than the idle timeout between parts of a body, and
// takes longer than it in all, is relayed whole: the client is not cut off for the
// origin's slowness.
func TestForwardSplicedSlowOriginCompletes(t *testing.T) {
	part := make([]byte, 64<<10)
	rand.Read(part)
	const parts = 6
	o := newOrigin(t, false, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(parts*len(part)))
		for i := 0; i < parts; i++ {
			_, _ = w.Write(part)
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond) // the origin's pace, not synchronisation
		}
	})
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"),
		TunnelIdleTimeout: 400 * time.Millisecond,
	})
	c := h.dialTCP(t)
	h.getRaw(t, c, "http://origin.test:"+o.port()+"/slow")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || len(got) != parts*len(part) || !bytes.Equal(got[:len(part)], part) {
		t.Fatalf("received %d bytes (%v), want %d", len(got), err, parts*len(part))
	}
	ctxShutdown(t, h) // the handler has counted when it returns
	if n := h.srv.spliced.Load(); n == 0 {
		t.Error("nothing was spliced: the test did not take the spliced path")
	}
}
