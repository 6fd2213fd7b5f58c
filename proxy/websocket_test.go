package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// wsOrigin is an origin handler that accepts an upgrade (101 with respond's extra
// header lines), then reports on the upgraded connection what the handshake carried,
// and echoes every byte the client sends after it, until the client closes its side.
// raw receives the bytes the origin read after the 101, once the client is done.
func wsOrigin(extra string, raw chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"X-Echo: "+r.Header.Get("Authorization")+"\r\n"+extra+"\r\n")
		io.WriteString(c, wsFrame("handshake had "+r.Header.Get("Authorization")+
			" extensions="+r.Header.Get("Sec-WebSocket-Extensions")))
		var got strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := brw.Read(buf)
			got.Write(buf[:n])
			c.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if raw != nil {
			raw <- got.String()
		}
	}
}

// wsFrame is payload (under 126 bytes) as one unmasked, final text frame: what a
// WebSocket server sends.
func wsFrame(payload string) string {
	return string([]byte{0x81, byte(len(payload))}) + payload
}

// readFrame reads one frame wsFrame wrote and returns its payload.
func readFrame(br *bufio.Reader) (string, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return "", err
	}
	p := make([]byte, h[1]&0x7f)
	_, err := io.ReadFull(br, p)
	return string(p), err
}

// wsDial opens a decrypted CONNECT to example.com:443 through m, speaking HTTP/1.1
// over the proxy's TLS, and writes req on it.
func wsDial(t *testing.T, m *mitmSetup, req string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c := m.h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "example.com:443"); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(tc, req); err != nil {
		t.Fatal(err)
	}
	return tc, bufio.NewReader(tc)
}

const wsUpgrade = "GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

// TestCredentialWebSocket: a WebSocket upgrade to a credential's host goes through
// the decrypting proxy: the upgrade request carries the credential (whatever
// Authorization the sandbox sent, the placeholder included, is replaced), no
// compression extension is offered (it would hide an echo from the masking), the 101
// reaches the client with the echoed value masked in its headers, bytes then flow both
// ways, an echo of the value on the upgraded connection is masked, and the audit log
// records the 101 with the credential and the bytes moved.
func TestCredentialWebSocket(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "TOKEN"}
	raw := make(chan string, 4)
	m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("", raw))
	msgs := []string{"ping", `{"type":"session.update"}`, "the value begins " + testToken[:6]}
	for _, sent := range []string{"", "Authorization: Bearer " + testPlaceholder + "\r\n", "Authorization: token someone-elses\r\n"} {
		tc, br := wsDial(t, m, wsUpgrade+sent+"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("sent %q: %s %q", sent, resp.Status, b)
		}
		if got := <-m.seen; got.Header.Get("Authorization") != "Bearer "+testToken {
			t.Errorf("sent %q: the origin saw Authorization %q", sent, got.Header.Get("Authorization"))
		}
		if e := resp.Header.Get("X-Echo"); e != "Bearer "+testPlaceholder[:len(testToken)] && e != "Bearer "+strings.Repeat("*", len(testToken)) {
			t.Errorf("the 101's echo of the header is %q, not masked", e)
		}
		line, err := readFrame(br)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, testToken) || !strings.Contains(line, "handshake had Bearer ") {
			t.Errorf("the upgraded connection said %q", line)
		}
		if !strings.HasSuffix(line, " extensions=") {
			t.Errorf("the origin was offered an extension: %q", line)
		}
		// Interactive: each message comes back whole before the next is sent, one
		// that ends as the value begins too.
		for _, msg := range msgs {
			if _, err := io.WriteString(tc, wsFrame(msg)); err != nil {
				t.Fatal(err)
			}
			if got, err := readFrame(br); err != nil || got != msg {
				t.Fatalf("echo of %q: %q, %v", msg, got, err)
			}
		}
		tc.CloseWrite()
		rest, _ := io.ReadAll(br)
		if len(rest) != 0 {
			t.Errorf("after the close: %q", rest)
		}
		if got := <-raw; got != wsFrame(msgs[0])+wsFrame(msgs[1])+wsFrame(msgs[2]) {
			t.Errorf("the origin read %q after the upgrade", got)
		}
		tc.Close()
	}
	m.h.shutdown(t)
	n := 0
	for _, r := range records(t, m.h) {
		if r.Method != "GET" {
			continue
		}
		n++
		if r.Status != http.StatusSwitchingProtocols || r.Credential != "Authorization" || r.BytesUp == 0 || r.BytesDown == 0 {
			t.Errorf("record %+v: want status 101, the credential named, bytes both ways", r)
		}
	}
	if n != 3 {
		t.Errorf("%d records of the upgrades, want 3", n)
	}
}

// TestWebSocketEchoSplitAcrossReads: an echo of the value in one frame that the host
// writes in two pieces, the second only once the client has sent more, is masked: the
// proxy holds back a tail that could begin a masked form until the frame goes on, and
// passes at once what cannot.
func TestWebSocketEchoSplitAcrossReads(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		frame := wsFrame("a:" + v)
		io.WriteString(c, frame[:14]) // the header, "a:" and 10 bytes of the value
		buf := make([]byte, 1)
		if _, err := io.ReadFull(brw, buf); err == nil {
			io.WriteString(c, frame[14:])
		}
	})
	tc, br := wsDial(t, m, wsUpgrade+"\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	head := make([]byte, 4)
	if _, err := io.ReadFull(br, head); err != nil || string(head[2:]) != "a:" {
		t.Fatalf("%q %v: the bytes before the echo did not come", head, err)
	}
	io.WriteString(tc, "x")
	rest := make([]byte, len(testToken))
	if _, err := io.ReadFull(br, rest); err != nil || string(rest) != strings.Repeat("*", len(testToken)) {
		t.Errorf("the split echo came back as %q, %v", rest, err)
	}
}

// TestWebSocketAttacks: what a hostile client inside can try with an upgrade toward a
// credential's host.
func TestWebSocketAttacks(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "TOKEN"}
	second := "GET /second HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer " + testPlaceholder + "\r\n\r\n"

	t.Run("upgrade naming another host", func(t *testing.T) {
		m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("", nil))
		_, br := wsDial(t, m, strings.Replace(wsUpgrade, "Host: example.com", "Host: other.test", 1)+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("%v %v", resp, err)
		}
		if n := m.origin.hits.Load(); n != 0 {
			t.Errorf("the origin had %d requests", n)
		}
	})

	// A request written after the 101 is bytes of the upgraded connection: the proxy
	// never reads it as a request, so it gets no credential, no swap of its
	// placeholder, and goes nowhere but the upgraded connection's host, as written.
	t.Run("request after the 101", func(t *testing.T) {
		raw := make(chan string, 1)
		m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("", raw))
		tc, br := wsDial(t, m, wsUpgrade+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%v %v", resp, err)
		}
		readFrame(br)
		io.WriteString(tc, second)
		buf := make([]byte, len(second))
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatal(err)
		}
		tc.CloseWrite()
		if got := <-raw; got != second {
			t.Errorf("the origin read %q, want the bytes as sent", got)
		}
		if n := m.origin.hits.Load(); n != 1 {
			t.Errorf("the origin had %d requests, want the upgrade alone", n)
		}
	})

	// Written in the same write as the upgrade, before any answer: still bytes of the
	// upgraded connection once the host switches.
	t.Run("request pipelined behind the upgrade", func(t *testing.T) {
		raw := make(chan string, 1)
		m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("", raw))
		tc, br := wsDial(t, m, wsUpgrade+"\r\n"+second)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%v %v", resp, err)
		}
		readFrame(br)
		buf := make([]byte, len(second))
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatal(err)
		}
		tc.CloseWrite()
		if got := <-raw; got != second {
			t.Errorf("the origin read %q, want the bytes as sent", got)
		}
		if n := m.origin.hits.Load(); n != 1 {
			t.Errorf("the origin had %d requests, want the upgrade alone", n)
		}
	})

	// A host that switches to a compressed stream although none was offered: its
	// echo would pass the masking unseen, so the switch is refused (502).
	t.Run("101 with an extension not offered", func(t *testing.T) {
		m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("Sec-WebSocket-Extensions: permessage-deflate\r\n", nil))
		_, br := wsDial(t, m, wsUpgrade+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%v %v", resp, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), testToken) {
			t.Errorf("the refusal carries the value: %q", b)
		}
	})

	// A CONNECT inside the decrypted tunnel asks to tunnel on: to another host it is
	// misdirected, as any request naming another host; to the tunnel's own host it is
	// refused (405), never sent there with the credential.
	t.Run("CONNECT inside the tunnel", func(t *testing.T) {
		m := newMITM(t, Config{Credentials: []Credential{cred}}, wsOrigin("", nil))
		for target, want := range map[string]int{"other.test:443": http.StatusMisdirectedRequest, "example.com:443": http.StatusMethodNotAllowed} {
			_, br := wsDial(t, m, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != want {
				t.Fatalf("CONNECT %s: %v %v", target, resp, err)
			}
		}
		if n := m.origin.hits.Load(); n != 0 {
			t.Errorf("the origin had %d requests", n)
		}
	})
}

// TestCredentialH2: over HTTP/2 (Go's client, ALPN h2) a request to a credential's
// host gets the credential exactly as over HTTP/1.1: the sandbox's Authorization is
// replaced, the echo masked.
func TestCredentialH2(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Placeholder: testPlaceholder, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, nil)
	c := m.client(t, true)
	for _, sent := range []map[string]string{nil, {"Authorization": "Bearer " + testPlaceholder}, {"Authorization": "token someone-elses"}} {
		resp, body := do(t, c, "GET", "https://example.com/user", sent)
		if resp.ProtoMajor != 2 {
			t.Fatalf("the client spoke %s", resp.Proto)
		}
		if got := <-m.seen; got.Header.Get("Authorization") != "Bearer "+testToken {
			t.Errorf("sent %v: the origin saw Authorization %q", sent, got.Header.Get("Authorization"))
		}
		if strings.Contains(body, testToken) || strings.Contains(resp.Header.Get("X-Echo"), testToken) {
			t.Errorf("the value came back: %q %q", resp.Header.Get("X-Echo"), body)
		}
	}
	resp, _ := do(t, c, "GET", "https://example.com/user?k="+testPlaceholder, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the placeholder in the query over HTTP/2: %s", resp.Status)
	}
}

// TestH2AuthorityOtherHost: an HTTP/2 request whose :authority names a host other
// than the CONNECT's (which the TLS name and the leaf certificate are for) is refused
// with 421 and reaches no host, the credential with it.
func TestH2AuthorityOtherHost(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, nil)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tr := &http.Transport{
		// Every connection is a CONNECT to example.com, whatever the URL says.
		DialTLSContext: func(_ context.Context, _, _ string) (net.Conn, error) {
			c, err := net.Dial("unix", m.h.sock)
			if err != nil {
				return nil, err
			}
			io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				c.Close()
				return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
			}
			tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com", NextProtos: []string{"h2"}})
			return tc, tc.Handshake()
		},
		ForceAttemptHTTP2: true,
	}
	defer tr.CloseIdleConnections()
	for _, u := range []string{"https://other.test/x", "https://example.com:8443/x", "https://127.0.0.1/x"} {
		resp, body := do(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, "GET", u, nil)
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s: %s %s %q", u, resp.Proto, resp.Status, body)
		}
	}
	if n := m.origin.hits.Load(); n != 0 {
		t.Errorf("the origin had %d requests", n)
	}
}

// TestCredentialWebSocketPlainHTTP: a ws:// upgrade sent to the proxy as a plain HTTP
// proxy request, toward an http:// credential's host, is relayed as through the
// decrypting proxy: the credential on the upgrade, its echo masked in the 101 and on
// the upgraded connection, bytes both ways.
func TestCredentialWebSocketPlainHTTP(t *testing.T) {
	o := newOrigin(t, false, wsOrigin("", nil))
	cred := Credential{Host: "http://svc.test:" + o.port(), Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "SVC_KEY"}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"svc.test"}, nil, "deny"), Resolver: loopback("svc.test"),
		Credentials: []Credential{cred}})
	c := h.dialUnix(t)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, strings.Replace(wsUpgrade, "GET /ws ", "GET http://svc.test:"+o.port()+"/ws ", 1)+
		"Authorization: token someone-elses\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	if e := resp.Header.Get("X-Echo"); e != "Bearer "+strings.Repeat("*", len(testToken)) {
		t.Errorf("the 101's echo of the header is %q", e)
	}
	line, err := readFrame(br)
	if err != nil || line != "handshake had Bearer "+strings.Repeat("*", len(testToken))+" extensions=" {
		t.Errorf("the upgraded connection said %q, %v", line, err)
	}
	io.WriteString(c, wsFrame("ping"))
	if got, err := readFrame(br); err != nil || got != "ping" {
		t.Errorf("echo %q, %v", got, err)
	}
}

// chunks is a reader that returns b step bytes at a time.
type chunks struct {
	b    []byte
	step int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.step)], c.b)
	c.b = c.b[n:]
	return n, nil
}

func (c *chunks) Close() error { return nil }

// TestWSRedact: the WebSocket masking follows frames with headers and payloads split
// anywhere, lengths of 7, 16 and 64 bits and a mask key, passes frames as they are
// (headers included) when nothing is masked, masks a value inside one frame, across
// the frames of a message and in a control frame, with every frame keeping its
// length, never joins two messages or a control frame into a message, and drops what
// an unfinished message holds back when the host goes.
func TestWSRedact(t *testing.T) {
	long := append([]byte{0x82, 126, 0x01, 0x00}, make([]byte, 256)...)
	huge := append([]byte{0x82, 127, 0, 0, 0, 0, 0, 0, 0x01, 0x00}, make([]byte, 256)...)
	masked := append([]byte{0x81, 0x80 | 3, 1, 2, 3, 4}, "abc"...)
	plain := slices.Concat([]byte(wsFrame("hi")), long, huge, masked, []byte(wsFrame("")))
	v := "secret-value-0123"
	stars := strings.Repeat("*", len(v))
	for _, c := range []struct{ name, in, want string }{
		{"nothing to mask", string(plain), string(plain)},
		{"in one frame", wsFrame("a " + v + " b"), wsFrame("a " + stars + " b")},
		{"across three frames, a ping between",
			wsRawFrame(false, 1, "a "+v[:3]) + wsRawFrame(true, 9, "p") + wsRawFrame(false, 0, v[3:9]) + wsRawFrame(true, 0, v[9:]+" b"),
			wsRawFrame(false, 1, "a "+stars[:3]) + wsRawFrame(true, 9, "p") + wsRawFrame(false, 0, stars[3:9]) + wsRawFrame(true, 0, stars[9:]+" b")},
		{"in a close frame", wsRawFrame(true, 8, "\x03\xe8"+v), wsRawFrame(true, 8, "\x03\xe8"+stars)},
		{"a message ending in the value's first bytes, then another (two messages: no echo of the value)",
			wsFrame("x "+v[:5]) + wsFrame(v[5:]), wsFrame("x "+v[:5]) + wsFrame(v[5:])},
		{"a ping inside a message the value spans, ending in the value's first bytes",
			wsRawFrame(false, 1, v[:4]) + wsRawFrame(true, 9, v[:6]) + wsRawFrame(true, 0, v[4:]),
			wsRawFrame(false, 1, stars[:4]) + wsRawFrame(true, 9, v[:6]) + wsRawFrame(true, 0, stars[4:])},
		{"the host gone inside a message", wsFrame("ok") + wsRawFrame(false, 1, "a "+v[:8]), wsFrame("ok") + wsRawFrame(false, 1, "a "+v[:8])[:4]},
	} {
		for _, step := range []int{1, 2, 3, 7, 100, len(c.in)} {
			r := newWSRedact(&chunks{[]byte(c.in), step}, [][]byte{[]byte(v)}, [][]byte{[]byte(stars)})
			got, err := io.ReadAll(r)
			if err != nil || string(got) != c.want {
				t.Errorf("%s, %d bytes a read:\n got %q %v\nwant %q", c.name, step, got, err, c.want)
			}
		}
	}
}

// TestWSRedactReleasesEndedMessage: what ends a message is passed at once, even when
// it ends in the first bytes of a value (the host may wait for the client), while
// the same bytes in a message that goes on are held until it does.
func TestWSRedactReleasesEndedMessage(t *testing.T) {
	v := "secret-value-0123"
	pr, pw := io.Pipe()
	r := newWSRedact(pr, [][]byte{[]byte(v)}, [][]byte{[]byte(strings.Repeat("*", len(v)))})
	go io.WriteString(pw, wsFrame("x "+v[:5]))
	ended := wsFrame("x " + v[:5])
	got := make([]byte, len(ended))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != ended {
		t.Fatalf("an ended message: %q %v", got, err)
	}
	open := wsRawFrame(false, 1, "y "+v[:5])
	go io.WriteString(pw, open)
	got = make([]byte, len(open)-5)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != open[:len(open)-5] {
		t.Fatalf("a message that goes on: %q %v", got, err)
	}
	go func() {
		io.WriteString(pw, wsRawFrame(true, 0, v[5:]))
		pw.Close()
	}()
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != strings.Repeat("*", 5)+wsRawFrame(true, 0, strings.Repeat("*", len(v)-5)) {
		t.Errorf("the rest: %q %v", rest, err)
	}
}

// TestWSRedactHeldOpen: a message held open at a tail that could begin a value,
// behind more control frames than the buffer holds, ends the stream (nothing of the
// tail passes) instead of spinning on a full buffer.
func TestWSRedactHeldOpen(t *testing.T) {
	v := "secret-value-0123"
	in := wsRawFrame(false, 1, "x "+v[:5]) + strings.Repeat(wsRawFrame(true, 9, "keepalive"), 8000)
	r := newWSRedact(&chunks{[]byte(in), 4096}, [][]byte{[]byte(v)}, [][]byte{[]byte(strings.Repeat("*", len(v)))})
	done := make(chan struct{})
	var got []byte
	var err error
	go func() {
		got, err = io.ReadAll(r)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the masking did not return")
	}
	if !errors.Is(err, errHeldOpen) || strings.Contains(string(got), v[:5]) {
		t.Errorf("%d bytes, %v", len(got), err)
	}
}

// TestPrefixTail: the tail held back is the longest that begins a form, and never a
// whole form (that is masked, not held).
func TestPrefixTail(t *testing.T) {
	forms := [][]byte{[]byte("secret-value"), []byte("c2VjcmV0")}
	for _, c := range []struct {
		buf  string
		want int
	}{
		{"hello", 0}, {"hello s", 1}, {"hello secret-val", 10}, {"xx c2Vj", 4}, {"secret-value", 0},
		{"s", 1}, {"", 0}, {"c2VjcmVsecret-valu", 11},
	} {
		if got := prefixTail([]byte(c.buf), forms); got != c.want {
			t.Errorf("prefixTail(%q) = %d, want %d", c.buf, got, c.want)
		}
	}
}
