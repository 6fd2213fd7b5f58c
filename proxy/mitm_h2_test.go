package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestMITMStalledH2ClientTimesOut is TestMITMStalledReaderTimesOut over HTTP/2: a
// client that asks for a large decrypted body and then stops reading its connection
// (not the stream alone: nothing at all) does not hold the connection past about the
// idle time. The stream's write deadline ends the handler, but HTTP/2 writes frames to
// the connection in a goroutine of its own with no deadline of its own, blocked on a
// client that takes nothing; the connection then lived until the server's IdleTimeout
// and its GOAWAY grace, 90 s and 1 s by default.
func TestMITMStalledH2ClientTimesOut(t *testing.T) {
	const size = 512 << 20 // more than any socket buffers hold
	const idle = 300 * time.Millisecond
	const bound = idle + idle/8 + time.Second // as TestMITMStalledReaderTimesOut
	m := newMITM(t, Config{TunnelIdleTimeout: idle}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := make([]byte, 1<<20)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	c := h2Request(t, m, "example.com", "/stalled")
	defer c.Close() // never read
	if !eventually(t, 10*time.Second, func() bool { return m.origin.hits.Load() == 1 }) {
		t.Fatal("the origin never had the request")
	}
	endsWithin(t, m.h, time.Now(), bound, "an HTTP/2 client that stops reading its connection")
}

// TestMITMSlowH2ReaderCompletes: the deadline of HTTP/2's frame writes moves on while
// bytes flow. A client reading its connection steadily, for longer than the idle
// timeout in all, gets the whole body (its frames: at least the body's bytes) before
// the connection ends; windows wide open, so the writes wait on the socket alone.
func TestMITMSlowH2ReaderCompletes(t *testing.T) {
	const idle = time.Second
	const size = 24 << 20
	m := newMITM(t, Config{TunnelIdleTimeout: idle}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
	})
	c := h2Request(t, m, "example.com", "/slow")
	defer c.Close()
	start := time.Now()
	var got int64
	for got < size {
		// about 2 s for the whole body, never long without reading
		n, err := io.CopyN(io.Discard, c, 256<<10)
		got += n
		if err != nil {
			t.Fatalf("after %d bytes in %v: %v", got, time.Since(start), err)
		}
		time.Sleep(20 * time.Millisecond) // the client's pace, not synchronisation
	}
	if time.Since(start) < idle {
		t.Fatalf("the download took %v: not longer than the idle timeout, proves nothing", time.Since(start))
	}
}

// h2Request opens a decrypted CONNECT to host:443 through m's proxy, speaks HTTP/2 on
// it (checking the proxy chose it), sends GET path with windows wide open, so only
// the connection's own buffers hold the response back, and returns the connection
// without reading anything more from it.
func h2Request(t *testing.T, m *mitmSetup, host, path string) net.Conn {
	t.Helper()
	raw, err := net.Dial("unix", m.h.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return h2RequestOn(t, m, raw, host, path)
}

// h2Get is what an HTTP/2 client sends first to GET path from host: the preface,
// SETTINGS and a WINDOW_UPDATE opening the stream's and the connection's windows
// wide, so only the connection's own buffers hold the response back, and the request.
func h2Get(host, path string) []byte {
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[5:], stream)
		return append(h, payload...)
	}
	const maxWindow = 1<<31 - 1
	settings := binary.BigEndian.AppendUint16(nil, 0x4) // SETTINGS_INITIAL_WINDOW_SIZE
	settings = binary.BigEndian.AppendUint32(settings, maxWindow)
	grow := binary.BigEndian.AppendUint32(nil, maxWindow-65535) // the connection's window, from its initial 64 KiB
	// HPACK, no Huffman: :method GET and :scheme https from the static table, :path
	// and :authority as literals with their names indexed (4 and 1).
	block := []byte{0x82, 0x87, 0x44, byte(len(path))}
	block = append(append(block, path...), 0x41, byte(len(host)))
	block = append(block, host...)
	msg := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	msg = append(msg, frame(0x4, 0, 0, settings)...)    // SETTINGS
	msg = append(msg, frame(0x8, 0, 0, grow)...)        // WINDOW_UPDATE
	msg = append(msg, frame(0x1, 0x1|0x4, 1, block)...) // HEADERS, END_STREAM|END_HEADERS
	return msg
}
