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
// names one anyway (permessage-deflate: a compressed echo) is refused with ErrUpgrade,
// and so is a switch to another protocol than the request asked for.
//
// Unlike a body, an upgraded connection is a conversation: a host answers and waits.
// A tail is held back only while it could begin a masked form, and for a WebSocket
// only until its message ends (wsRedact): a host that has begun a message has said
// that more follows, while one whose message is complete may wait for the client. A
// WebSocket is masked in its messages' payloads, joined across frames, as the client
// reads them: an echo is masked however the host's writes and frames split it.
// Another protocol has no messages to end: its tail waits for more bytes while it
// could begin a form.
func (a *applied) upgraded(resp *http.Response, ex *exchange) error {
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		return nil // ReverseProxy refuses it itself
	}
	masks := a != nil && a.hasValues()
	got := strings.TrimSpace(resp.Header.Get("Upgrade"))
	if asked := upgradeAsked(resp); masks && !strings.EqualFold(got, asked) {
		// The masking is chosen by the protocol: a WebSocket answered under another
		// name would be searched as a byte stream, where a frame header between two
		// halves of an echo hides it. ReverseProxy refuses a mismatch on the
		// decrypted path; plain HTTP to an http:// credential comes here first.
		return fmt.Errorf("%w: the host switched to %q when %q was asked for", ErrUpgrade, got, asked)
	}
	ws := strings.EqualFold(got, "websocket")
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); masks && ws && ext != "" {
		return fmt.Errorf("%w: the host switched to a WebSocket with extension %q, which the proxy did not offer", ErrUpgrade, ext)
	}
	// ReverseProxy writes the 101 on the hijacked connection, past the responseWriter
	// that records a status; a refusal after this (a mismatched protocol) records its
	// own.
	ex.setStatus(http.StatusSwitchingProtocols)
	u := &upgradedConn{rwc: rwc, ex: ex, r: rwc}
	if masks {
		var from, to [][]byte
		for _, c := range a.creds {
			for _, f := range c.forms() {
				from, to = append(from, f.from), append(to, f.to)
			}
		}
		if ws {
			u.r = newWSRedact(rwc, from, to)
		} else {
			rr := &redactReader{src: rwc, from: from, to: to}
			rr.hold = func(buf []byte, _ int) int { return prefixTail(buf, rr.from) }
			u.r = rr
		}
	}
	resp.Body = u
	return nil
}

// upgradeAsked is the protocol the request behind resp asked to switch to ("" when
// it is not known).
func upgradeAsked(resp *http.Response) string {
	if resp.Request == nil {
		return ""
	}
	return strings.TrimSpace(resp.Request.Header.Get("Upgrade"))
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
