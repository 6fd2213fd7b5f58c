package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestMITMResponseRecordsGathered: the records of an HTTP/1.1 response body that the
// origin's socket already holds reach the client in one write, not one write a record
// (crypto/tls returns one record per read, and sends a connection's first 128 KiB in
// records that grow from about one packet).
func TestMITMResponseRecordsGathered(t *testing.T) {
	const size = 3 * mitmRecord
	written := make(chan struct{})
	m := newMITM(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
		close(written) // the body is in the origin's socket, or past it
	})
	ln := newPipeListener()
	m.h.srv.Serve(ln)
	raw := &writeCounter{Conn: ln.dial(t)}
	c := h1RequestOn(t, m, raw, "example.com", "/large")
	select {
	case <-written:
	case <-time.After(30 * time.Second):
		t.Fatal("the origin did not get its body out")
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, resp.Body); n != size || err != nil {
		t.Fatalf("the body: %d bytes, %v; want %d", n, err, size)
	}
	writes, records := raw.counts()
	t.Logf("%d writes, %d TLS records of the proxy after the handshake", writes, records)
	// A session ticket, the response's head (sent before the relay first reads the
	// origin), its body.
	if writes > 3 {
		t.Errorf("the proxy wrote %d times (%d TLS records) for a response whose body the origin had already sent: want 3 at most", writes, records)
	}
}

// h1RequestOn opens a decrypted tunnel to host over raw, speaking HTTP/1.1 in it, and
// sends a GET of path.
func h1RequestOn(t *testing.T, m *mitmSetup, raw net.Conn, host, path string) *tls.Conn {
	t.Helper()
	if _, err := io.WriteString(raw, "CONNECT "+host+":443 HTTP/1.1\r\nHost: "+host+":443\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil) // the proxy sends nothing before the client's first byte
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: host, NextProtos: []string{"http/1.1"}})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if wc, ok := raw.(*writeCounter); ok {
		wc.reset()
	}
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}
