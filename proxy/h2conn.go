package proxy

import (
	"crypto/tls"
	"net"
	"sync"
)

// maxRecordPlaintext is the most plaintext one TLS record carries (RFC 8446, 5.1).
const maxRecordPlaintext = 16 << 10

// h2Conn is a decrypted client connection that negotiated HTTP/2, as the inner
// server's HTTP/2 side writes to it. A full DATA frame is its 9-byte header and 16 KiB
// of payload, 9 bytes more than a TLS record carries: crypto/tls makes two records of
// each, and wrote them to the socket in two writes, the second of 31 bytes. A write
// larger than one record goes to the socket as one write here: raw gathers the
// records the TLS layer makes of it, and sends them when that write ends. Nothing is
// held past the write that made it, so what the origin sent never waits for more.
//
// It is not a *tls.Conn and has no ConnectionState, so the inner server takes it for
// HTTP/2 with prior knowledge (Protocols UnencryptedHTTP2); the TLS is this one's.
type h2Conn struct {
	net.Conn // the *tls.Conn over raw
	raw      *recordBatcher
}

func (c *h2Conn) Write(p []byte) (int, error) {
	if len(p) <= maxRecordPlaintext {
		return c.Conn.Write(p) // one record at most: nothing to gather
	}
	c.raw.begin()
	n, err := c.Conn.Write(p)
	if ferr := c.raw.end(); err == nil && ferr != nil {
		// The TLS layer took all of p into records; part of them may be on the wire,
		// so the write cannot be resumed (and cutConn closed a connection that timed
		// out): report it failed whole.
		return n, ferr
	}
	return n, err
}

// recordBatcher is the socket under a decrypted client connection's TLS. Between
// begin and end (an h2Conn's large write), writes (the records of one TLS write) are
// copied into a buffer, which end writes to the socket in one write; between hold and
// release (an HTTP/1.1 response's body, see gather.go) every write is, until flush,
// release, a read of the socket, or gatherLimit. Other writes (an alert, a small
// write) go straight through, after whatever is gathered. Writes reach the socket in
// the order they were made.
type recordBatcher struct {
	net.Conn
	mu      sync.Mutex
	open    int  // writes between begin and end
	holding bool // between hold and release: writes gathered until flush (see gather.go)
	buf     []byte
}

// hold gathers every write until flush or release, gatherLimit at most.
func (c *recordBatcher) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// release ends hold and sends what was gathered.
func (c *recordBatcher) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	return c.flushLocked()
}

// flush sends what was gathered.
func (c *recordBatcher) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// Read sends what was gathered before it may wait for the client.
func (c *recordBatcher) Read(p []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *recordBatcher) begin() {
	c.mu.Lock()
	c.open++
	c.mu.Unlock()
}

// end sends what was gathered since begin.
func (c *recordBatcher) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	return c.flushLocked()
}

func (c *recordBatcher) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 64<<10 && !c.holding {
		c.buf = nil // larger than DATA frames are, and no response is gathered: do not keep it
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

func (c *recordBatcher) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open > 0 || c.holding {
		c.buf = append(c.buf, p...) // the TLS layer reuses p for its next record
		if c.open == 0 && len(c.buf) >= gatherLimit {
			return len(p), c.flushLocked()
		}
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// h2Suite reports whether cs is TLS that HTTP/2 may run over: TLS 1.3, or TLS 1.2 with
// an ephemeral key exchange and an AEAD cipher (RFC 9113, 9.2.2), of the suites
// crypto/tls offers.
func h2Suite(cs tls.ConnectionState) bool {
	if cs.Version >= tls.VersionTLS13 {
		return true
	}
	switch cs.CipherSuite {
	case tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:
		return true
	}
	return false
}
