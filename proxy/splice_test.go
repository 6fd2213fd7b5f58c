package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// A tunnel moves megabytes both ways intact, bytes sent with the CONNECT first, ends
// the target's input when the client half-closes, and records exact counts.
func TestTunnelBulkHalfCloseCounts(t *testing.T) {
	echo := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"echo.test"}, nil, "deny"), Resolver: loopback("echo.test")})
	c := h.dialUnix(t)
	hostport := "echo.test:" + echo.port()
	payload := make([]byte, 8<<20)
	rand.Read(payload)
	want := append([]byte("early"), payload...)
	io.WriteString(c, "CONNECT "+hostport+" HTTP/1.1\r\nHost: "+hostport+"\r\n\r\nearly")
	head := "HTTP/1.1 200 Connection established\r\n\r\n"
	if got := make([]byte, len(head)); func() bool { _, err := io.ReadFull(c, got); return err != nil || string(got) != head }() {
		t.Fatalf("no tunnel: %q", got)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.UnixConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c) // ends only if the echo saw end of input and closed
	if err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes, want %d (equal: false)", len(got), len(want))
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.ReadLog(h.logDir, audit.LogFilter{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v, %v; want one", recs, err)
	}
	if n := int64(len(want)); recs[0].BytesUp != n || recs[0].BytesDown != n {
		t.Errorf("recorded %d up, %d down; want %d each", recs[0].BytesUp, recs[0].BytesDown, n)
	}
}

// A client that stops reading a tunnel does not hold it: the write to it times out
// after the idle timeout and the tunnel ends then.
func TestTunnelStalledReaderTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				chunk := []byte(strings.Repeat("z", 1<<20))
				for {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	const idle = 200 * time.Millisecond
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"flood.test"}, nil, "deny"), Resolver: loopback("flood.test"),
		TunnelIdleTimeout: idle,
	})
	c := h.dialUnix(t)
	port := ln.Addr().(*net.TCPAddr).Port
	start := time.Now()
	rawConnect(t, c, net.JoinHostPort("flood.test", strconv.Itoa(port)))
	endsWithin(t, h, start, idle+time.Second, "a client that stopped reading a tunnel")
}
