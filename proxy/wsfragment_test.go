package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// wsRawFrame is one unmasked frame as a server sends it: fin, opcode, and the
// payload's length in the 7- or 16-bit form.
func wsRawFrame(fin bool, opcode byte, payload string) string {
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	if len(payload) < 126 {
		return string([]byte{b0, byte(len(payload))}) + payload
	}
	h := []byte{b0, 126, 0, 0}
	binary.BigEndian.PutUint16(h[2:], uint16(len(payload)))
	return string(h) + payload
}

// readMessage reads frames until one with FIN that is not a control frame, and
// returns the message's payload, as a WebSocket client hands it to its program.
func readMessage(br *bufio.Reader) (string, error) {
	var msg strings.Builder
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return msg.String(), err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var l [2]byte
			if _, err := io.ReadFull(br, l[:]); err != nil {
				return msg.String(), err
			}
			n = uint64(binary.BigEndian.Uint16(l[:]))
		case 127:
			var l [8]byte
			if _, err := io.ReadFull(br, l[:]); err != nil {
				return msg.String(), err
			}
			n = binary.BigEndian.Uint64(l[:])
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			return msg.String(), err
		}
		if h[0]&0x0f >= 8 {
			continue // a control frame inside the message
		}
		msg.Write(p)
		if h[0]&0x80 != 0 {
			return msg.String(), nil
		}
	}
}

// TestWebSocketEchoSplitAcrossFrames: a host that reflects the upgrade request's
// credential header in a message it sends fragmented (gorilla/websocket, for one,
// sends a message longer than its write buffer as several frames, 4 KiB each by
// default), where the sandbox chooses the offset by what the host reflects before it
// (a longer path or header), does not hand the value back in two pieces either side
// of a frame header: the client joins the fragments into one message, as every
// WebSocket library does, and reads the whole value. The split at every offset of the
// value, fragments in the 7- and 16-bit length forms, a ping between two fragments,
// and the second fragment sent only once the client has written.
func TestWebSocketEchoSplitAcrossFrames(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	type split struct {
		at     int  // the first fragment ends this many bytes into the value
		pad    int  // bytes before the echo in the first fragment
		ping   bool // a ping between the fragments
		waitUp bool // the second fragment only once the client has sent a byte
	}
	var cases []split
	for at := 1; at < len(testToken); at += 7 {
		cases = append(cases, split{at: at}, split{at: at, pad: 300})
	}
	cases = append(cases, split{at: len(testToken) - 1, ping: true}, split{at: 5, waitUp: true}, split{at: 20, pad: 200, ping: true, waitUp: true})
	next := make(chan split, 1)
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		s := <-next
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		msg := strings.Repeat("p", s.pad) + "you sent " + r.Header.Get("Authorization") + " to " + r.URL.Path
		cut := s.pad + len("you sent Bearer ") + s.at
		io.WriteString(c, wsRawFrame(false, 1, msg[:cut]))
		if s.ping {
			io.WriteString(c, wsRawFrame(true, 9, "keepalive"))
		}
		if s.waitUp {
			buf := make([]byte, 1)
			if _, err := io.ReadFull(brw, buf); err != nil {
				return
			}
		}
		io.WriteString(c, wsRawFrame(true, 0, msg[cut:]))
		io.Copy(io.Discard, brw)
	})
	for _, s := range cases {
		next <- s
		tc, br := wsDial(t, m, wsUpgrade+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%+v: %v %v", s, resp, err)
		}
		if s.waitUp {
			io.WriteString(tc, wsRawFrame(true, 1, "x"))
		}
		got, err := readMessage(br)
		want := strings.Repeat("p", s.pad) + "you sent Bearer " + strings.Repeat("*", len(testToken)) + " to /ws"
		name := fmt.Sprintf("split %d bytes into the value, %d before it, ping %v, waiting for the client %v", s.at, s.pad, s.ping, s.waitUp)
		if strings.Contains(got, testToken) {
			t.Errorf("%s: the client joined the fragments into the value: %q", name, strings.TrimLeft(got, "p"))
		} else if err != nil || got != want {
			t.Errorf("%s: message %q, %v; want %q", name, strings.TrimLeft(got, "p"), err, strings.TrimLeft(want, "p"))
		}
		tc.Close()
	}
}

// BenchmarkWSRedact: what the WebSocket masking costs per byte, for a stream of
// small messages (many groups a read) and of large fragmented ones.
func BenchmarkWSRedact(b *testing.B) {
	cred := &credential{Credential: Credential{Format: "Bearer {}", Value: testToken}}
	var from, to [][]byte
	for _, f := range cred.forms() {
		from, to = append(from, f.from), append(to, f.to)
	}
	small := strings.Repeat(wsFrame(`{"type":"delta","text":"hello"}`), 2000)
	large := strings.Repeat(wsRawFrame(false, 1, strings.Repeat("x", 4000))+wsRawFrame(true, 0, strings.Repeat("y", 4000)), 100)
	for name, in := range map[string]string{"small": small, "large": large} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				r := newWSRedact(&chunks{[]byte(in), 32 << 10}, from, to)
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUpgradeMismatchRefused: a 101 whose Upgrade names another protocol than the
// request asked for is refused (502), on plain HTTP to an http:// credential as on
// the decrypted path: the masking is chosen by the protocol, and a host that
// answered a WebSocket request with "Upgrade: websocket, foo" (or "foo") had its
// WebSocket masked as a byte stream, where a frame header between two halves of an
// echo hides it.
func TestUpgradeMismatchRefused(t *testing.T) {
	origin := func(up string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "+up+"\r\nConnection: Upgrade\r\n\r\n")
			msg := "you sent " + r.Header.Get("Authorization")
			cut := len("you sent Bearer ") + 10
			io.WriteString(c, wsRawFrame(false, 1, msg[:cut])+wsRawFrame(true, 0, msg[cut:]))
		}
	}
	for _, up := range []string{"websocket, foo", "foo"} {
		o := newOrigin(t, false, origin(up))
		cred := Credential{Host: "http://svc.test:" + o.port(), Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "SVC_KEY"}
		h := newHarness(t, Config{Policy: mustPolicy(t, []string{"svc.test"}, nil, "deny"), Resolver: loopback("svc.test"), Credentials: []Credential{cred}})
		c := h.dialUnix(t)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, strings.Replace(wsUpgrade, "GET /ws ", "GET http://svc.test:"+o.port()+"/ws ", 1)+"\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("Upgrade: %s: %v", up, err)
		}
		var got string
		if resp.StatusCode == http.StatusSwitchingProtocols {
			got, _ = readMessage(br) // the fragments joined, as a client does
		}
		if strings.Contains(got, testToken) {
			t.Errorf("Upgrade: %s: %s, and the client read the value: %q", up, resp.Status, got)
		} else if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("Upgrade: %s: %s, want 502", up, resp.Status)
		}
		c.Close()
	}
}
