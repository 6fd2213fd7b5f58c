package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrUpgrade is wrapped by the error for a protocol switch (101) from a credential's
// host that the proxy refuses (502), because what follows would pass its masking
// unsearched.
var ErrUpgrade = errors.New("protocol switch the proxy cannot search")

// upgraded makes the connection a 101 response switched to (resp.Body, which
// ReverseProxy relays both ways) count its bytes in ex, and, when ex's request carried
// credential values, mask them in what the host sends (credential.forms), as in a
// body. The request asked for no extension (askIdentity); a WebSocket switch that
// names one anyway (permessage-deflate: a compressed echo) is refused with ErrUpgrade.
//
// Unlike a body, an upgraded connection is a conversation: a host answers and waits.
// A tail is held back only while it could begin a masked form, and for a WebSocket
// only until its frame ends (wsFrames): a host that has begun a frame has said how
// many bytes follow, while one whose frame is complete may wait for the client. So
// an echo within a frame is masked however the host's writes split it; one the host
// splits across frames is not found (as a split it makes in a body). Another protocol
// has no frames to end: its tail waits for more bytes while it could begin a form.
func (a *applied) upgraded(resp *http.Response, ex *exchange) error {
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		return nil // ReverseProxy refuses it itself
	}
	masks := a != nil && a.hasValues()
	ws := strings.EqualFold(resp.Header.Get("Upgrade"), "websocket")
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); masks && ws && ext != "" {
		return fmt.Errorf("%w: the host switched to a WebSocket with extension %q, which the proxy did not offer", ErrUpgrade, ext)
	}
	// ReverseProxy writes the 101 on the hijacked connection, past the responseWriter
	// that records a status; a refusal after this (a mismatched protocol) records its
	// own.
	ex.setStatus(http.StatusSwitchingProtocols)
	u := &upgradedConn{rwc: rwc, ex: ex, r: rwc}
	if masks {
		rr := &redactReader{src: rwc}
		for _, c := range a.creds {
			for _, f := range c.forms() {
				rr.from = append(rr.from, f.from)
				rr.to = append(rr.to, f.to)
				rr.keep = max(rr.keep, len(f.from)-1)
			}
		}
		var frames *wsFrames
		if ws {
			frames = &wsFrames{}
		}
		rr.hold = func(buf []byte, fresh int) int {
			if frames != nil {
				frames.feed(buf[len(buf)-fresh:])
				if frames.atBoundary() {
					return 0
				}
			}
			return prefixTail(buf, rr.from)
		}
		u.r = rr
	}
	resp.Body = u
	return nil
}

// upgradedConn is the host's side of a switched connection, as ReverseProxy relays
// it: reads (masked when r is a redactReader) count as bytes down, writes as bytes up.
type upgradedConn struct {
	rwc io.ReadWriteCloser
	r   io.Reader
	ex  *exchange
}

func (u *upgradedConn) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	u.ex.down.Add(int64(n))
	return n, err
}

func (u *upgradedConn) Write(p []byte) (int, error) {
	n, err := u.rwc.Write(p)
	u.ex.up.Add(int64(n))
	return n, err
}

func (u *upgradedConn) Close() error { return u.rwc.Close() }

// CloseWrite passes the client's end of sending on to the host.
func (u *upgradedConn) CloseWrite() error {
	if cw, ok := u.rwc.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// prefixTail is the length of the longest tail of buf that is a proper prefix of one
// of forms: the bytes that may yet become one.
func prefixTail(buf []byte, forms [][]byte) int {
	longest := 0
	for _, f := range forms {
		for j := max(len(buf)-len(f)+1, 0); j < len(buf)-longest; j++ {
			if bytes.HasPrefix(f, buf[j:]) {
				longest = len(buf) - j
				break
			}
		}
	}
	return longest
}

// wsFrames follows the frames of a WebSocket stream (RFC 6455, section 5.2) a host
// sends, to tell whether the bytes fed so far end one.
type wsFrames struct {
	head []byte // a frame's header read in part
	left uint64 // payload bytes of the current frame still to come
}

func (w *wsFrames) feed(p []byte) {
	for len(p) > 0 {
		if w.left > 0 {
			k := min(w.left, uint64(len(p)))
			w.left -= k
			p = p[k:]
			continue
		}
		w.head = append(w.head, p[0])
		p = p[1:]
		if n, ok := w.payload(); ok {
			w.left, w.head = n, w.head[:0]
		}
	}
}

// payload is the payload length of the frame whose header is head, once head is whole.
func (w *wsFrames) payload() (uint64, bool) {
	h := w.head
	if len(h) < 2 {
		return 0, false
	}
	size := 2
	switch h[1] & 0x7f {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if h[1]&0x80 != 0 {
		size += 4 // a mask key (only clients mask; taken as sent)
	}
	if len(h) < size {
		return 0, false
	}
	switch n := uint64(h[1] & 0x7f); n {
	case 126:
		return uint64(h[2])<<8 | uint64(h[3]), true
	case 127:
		var v uint64
		for _, b := range h[2:10] {
			v = v<<8 | uint64(b)
		}
		return v, true
	default:
		return n, true
	}
}

// atBoundary reports whether the bytes fed end a frame (or none has begun).
func (w *wsFrames) atBoundary() bool { return w.left == 0 && len(w.head) == 0 }
