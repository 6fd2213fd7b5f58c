package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestMITMLargeBody: a large sized body and a chunked one (many TLS records each) come
// through a decrypted tunnel whole, and the audit log counts each exactly.
func TestMITMLargeBody(t *testing.T) {
	const size = 3<<20 + 12345
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 7)
	}
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sized" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 100_000)
			w.Write(rest[:n])
			rest = rest[n:]
		}
	})
	c := m.client(t, false)
	for _, path := range []string{"/sized", "/chunked"} {
		resp, got := do(t, c, "GET", "https://example.com"+path, nil)
		if resp.StatusCode != 200 || sha256.Sum256([]byte(got)) != sha256.Sum256(body) {
			t.Errorf("%s: %d, %d bytes, want 200 and the %d sent", path, resp.StatusCode, len(got), size)
		}
	}
	m.h.shutdown(t)
	n := 0
	for _, r := range records(t, m.h) {
		if r.Method == "GET" {
			n++
			if r.BytesDown != size {
				t.Errorf("%s: %d bytes down recorded, want %d", r.Path, r.BytesDown, size)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d requests recorded, want 2", n)
	}
}

// mitmRecord is the plaintext of a full TLS record.
const mitmRecord = 16 << 10

// TestMITMStalledOriginDelivers: what the origin sent reaches the client while the
// origin waits for the client to have it: the proxy never holds received bytes back
// to wait for more (a relay that gathers records to write them together must not).
func TestMITMStalledOriginDelivers(t *testing.T) {
	// The second is a large body, where a relay may read ahead of the client.
	for _, size := range []int{16 * mitmRecord, 1<<20 + 16*mitmRecord} {
		const first = 8 * mitmRecord
		received := make(chan struct{})
		m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(size))
			w.Write(make([]byte, first))
			w.(http.Flusher).Flush()
			select {
			case <-received: // the client has the first part: send the rest
			case <-time.After(10 * time.Second):
				return // the client never got it: the body ends short
			}
			w.Write(make([]byte, size-first))
		})
		resp, err := m.client(t, false).Get("https://example.com/stall")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, first)); err != nil {
			t.Fatalf("size %d: the first %d bytes: %v", size, first, err)
		}
		close(received)
		if n, err := io.Copy(io.Discard, resp.Body); n != int64(size-first) || err != nil {
			t.Errorf("size %d: the rest: %d bytes, %v", size, n, err)
		}
		resp.Body.Close()
	}
}

// TestMITMUpstreamVerified: the proxy's own TLS to the origin sends the host's name
// and checks the origin's certificate against RootCAs and that name: an origin it
// cannot verify gets no request, and the client a 502.
func TestMITMUpstreamVerified(t *testing.T) {
	var sni []string
	var mu sync.Mutex
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sni = append(sni, r.TLS.ServerName)
		mu.Unlock()
		io.WriteString(w, tls.VersionName(r.TLS.Version))
	}
	m := newMITM(t, Config{}, handler)
	resp, body := do(t, m.client(t, false), "GET", "https://example.com/", nil)
	if resp.StatusCode != 200 || body != "TLS 1.3" || len(sni) != 1 || sni[0] != "example.com" {
		t.Errorf("got %d %q, server names %q; want 200, TLS 1.3, example.com", resp.StatusCode, body, sni)
	}
	// The origin's certificate names example.com, other.test and rebind.test only.
	wrong := newMITM(t, Config{Policy: mustPolicy(t, []string{"wrong.test"}, nil, "deny"), Resolver: loopback("wrong.test")}, handler)
	if resp, _ := do(t, wrong.client(t, false), "GET", "https://wrong.test/", nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("an origin whose certificate names other hosts: %d, want 502", resp.StatusCode)
	}
	// A proxy that trusts no root.
	o := newOrigin(t, true, handler)
	proxyCA := newTestCA(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"example.com"}, nil, "deny"), Resolver: loopback("example.com"),
		CA: &proxyCA.TLS, RootCAs: x509.NewCertPool(),
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, o.Listener.Addr().String())
		}})
	untrusting := (&mitmSetup{ca: proxyCA, h: h}).client(t, false)
	if resp, _ := do(t, untrusting, "GET", "https://example.com/", nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("an origin the proxy cannot verify: %d, want 502", resp.StatusCode)
	}
	if len(sni) != 1 || o.hits.Load() != 0 {
		t.Errorf("unverified origins served %d requests", len(sni)-1+int(o.hits.Load()))
	}
}

// TestMITMClientLeavesLargeBody: a client that closes its connection in the middle of
// a large body ends the upstream connection too: a read in progress is not left
// waiting on an origin that sends nothing more, and the handler finishes.
func TestMITMClientLeavesLargeBody(t *testing.T) {
	const mib = 1 << 20
	const sent, size = 2 * mib, 8 * mib
	upstreamClosed := make(chan struct{})
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, sent))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the proxy closed the connection
		close(upstreamClosed)
	})
	c := m.client(t, false)
	resp, err := c.Get("https://example.com/leave")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, mib)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // not read to its end: the client's transport closes the connection
	select {
	case <-upstreamClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream connection stayed open 10 s after the client left")
	}
	if !eventually(t, 10*time.Second, func() bool { return m.h.srv.track.running() == 0 }) {
		t.Error("the proxy's handler did not finish after the client left")
	}
}

// TestMITMSlowReaderCompletes: a decrypted download that takes longer than the idle
// timeout in all, to a client that reads steadily, completes: the write deadline moves
// on while the body flows (the copy path; the spliced one has its own test).
func TestMITMSlowReaderCompletes(t *testing.T) {
	const idle = time.Second
	const size = 24 << 20
	m := newMITM(t, Config{TunnelIdleTimeout: idle}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
	})
	resp, err := m.client(t, false).Get("https://example.com/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	var got int64
	for {
		// about 2 s for the whole body, never long without reading
		n, err := io.CopyN(io.Discard, resp.Body, 256<<10)
		got += n
		if err != nil || n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond) // the client's pace, not synchronisation
	}
	if got != size {
		t.Fatalf("received %d bytes in %v, want %d", got, time.Since(start), size)
	}
	if time.Since(start) < idle {
		t.Fatalf("the download took %v: not longer than the idle timeout, proves nothing", time.Since(start))
	}
}

// TestMITMStalledReaderTimesOut: a client that asks for a large decrypted body and
// never reads it does not hold the handler: a write to it times out after about the
// idle timeout, the connection ends at once (the TLS close does not wait for the
// client to take a close_notify it is not reading), and the request is recorded with
// the bytes that did go out.
func TestMITMStalledReaderTimesOut(t *testing.T) {
	const size = 512 << 20 // more than any socket buffers hold
	const idle = 300 * time.Millisecond
	// The body stops moving within moments of its head; the write deadline is then at
	// most idle and an eighth away (responseWriter.refresh).
	const bound = idle + idle/8 + time.Second
	m := newMITM(t, Config{TunnelIdleTimeout: idle}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := make([]byte, 1<<20)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	resp, err := m.client(t, false).Get("https://example.com/stalled")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read
	endsWithin(t, m.h, time.Now(), bound, "a client that never reads the response it asked for")
	if n := m.origin.hits.Load(); n != 1 {
		t.Fatalf("the origin served %d requests, want 1", n)
	}
	m.h.shutdown(t)
	for _, r := range records(t, m.h) {
		if r.Method == "GET" && (r.Status != 200 || r.BytesDown <= 0 || r.BytesDown >= size) {
			t.Fatalf("record %+v, want a 200 with part of the body", r)
		}
	}
}

// TestStalledOriginUploadTimesOut: an origin that stops reading a large upload does not
// hold the handler, decrypted or plain: the write to it times out after about the idle
// timeout and the upstream connection closes at once (over TLS, without waiting to
// send a close_notify the origin does not read). Before, the handler waited on the
// origin for as long as it kept the connection open, even after the client had left:
// the server notices a client's close only once it has read the request body.
func TestStalledOriginUploadTimesOut(t *testing.T) {
	const size = 512 << 20 // more than any socket buffers hold
	const idle = 300 * time.Millisecond
	// As TestMITMStalledReaderTimesOut, and net/http's half a second between closing
	// the write side of a client connection whose request body was not read and
	// closing it (rstAvoidanceDelay).
	const bound = idle + idle/8 + 500*time.Millisecond + time.Second
	stall := func(release chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			select { // the body is never read
			case <-release:
			case <-r.Context().Done():
			}
		}
	}
	for _, mitm := range []bool{true, false} {
		t.Run(map[bool]string{true: "decrypted", false: "plain"}[mitm], func(t *testing.T) {
			release := make(chan struct{})
			var h *harness
			var c *http.Client
			var u string
			var hits func() int64
			if mitm {
				m := newMITM(t, Config{TunnelIdleTimeout: idle}, stall(release))
				h, c, u, hits = m.h, m.client(t, false), "https://example.com/up", m.origin.hits.Load
			} else {
				o := newOrigin(t, false, stall(release))
				h = newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"), TunnelIdleTimeout: idle})
				c, u, hits = h.unixClient(t, nil), "http://origin.test:"+o.port()+"/up", o.hits.Load
			}
			t.Cleanup(func() { close(release) }) // before the origin closes: it waits for its handlers
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := c.Post(u, "application/octet-stream", io.LimitReader(zeros{}, size))
				if err == nil {
					resp.Body.Close()
				}
				done <- resp
			}()
			if !eventually(t, 10*time.Second, func() bool { return hits() == 1 }) {
				t.Fatal("the origin never had the request")
			}
			endsWithin(t, h, time.Now(), bound, "an origin that stops reading an upload")
			if resp := <-done; resp != nil && resp.StatusCode != http.StatusBadGateway {
				t.Errorf("the client got %d, want 502 or a failed upload", resp.StatusCode)
			}
		})
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestSlowOriginUploadCompletes: an upload that takes longer than the idle timeout in
// all, to an origin that reads steadily, completes, decrypted or plain: the upstream
// write deadline moves on while the body flows.
func TestSlowOriginUploadCompletes(t *testing.T) {
	const idle = 500 * time.Millisecond
	const size = 8 << 20
	slow := func(w http.ResponseWriter, r *http.Request) {
		var got int64
		for {
			// about 1.3 s for the whole body, never long without reading
			n, err := io.CopyN(io.Discard, r.Body, 128<<10)
			got += n
			if err != nil || n == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond) // the origin's pace, not synchronisation
		}
		io.WriteString(w, strconv.FormatInt(got, 10))
	}
	for _, mitm := range []bool{true, false} {
		t.Run(map[bool]string{true: "decrypted", false: "plain"}[mitm], func(t *testing.T) {
			var c *http.Client
			var u string
			if mitm {
				m := newMITM(t, Config{TunnelIdleTimeout: idle}, slow)
				c, u = m.client(t, false), "https://example.com/up"
			} else {
				o := newOrigin(t, false, slow)
				h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"), TunnelIdleTimeout: idle})
				c, u = h.unixClient(t, nil), "http://origin.test:"+o.port()+"/up"
			}
			start := time.Now()
			resp, err := c.Post(u, "application/octet-stream", io.LimitReader(zeros{}, size))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != 200 || string(body) != strconv.Itoa(size) {
				t.Fatalf("%d %q after %v, want 200 and the origin reading all %d bytes", resp.StatusCode, body, took, size)
			}
			if took < idle {
				t.Fatalf("the upload took %v: not longer than the idle timeout, proves nothing", took)
			}
		})
	}
}
