package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// TestKeepAliveEachRequestChecked: every request on one client connection is decided on
// its own, whether the client waits for each response or pipelines them. The denied
// host resolves to the allowed origin's address and port, so an upstream connection
// reused by address (not by the host asked for) would carry the second request there.
func TestKeepAliveEachRequestChecked(t *testing.T) {
	o := newOrigin(t, false, hello)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test", "denied.test")})
	req := func(host string) string {
		return "GET http://" + host + ":" + o.port() + "/x HTTP/1.1\r\nHost: " + host + ":" + o.port() + "\r\n\r\n"
	}
	for _, pipelined := range []bool{false, true} {
		before := o.hits.Load()
		c := h.dialUnix(t)
		br := bufio.NewReader(c)
		var codes []int
		read := func() {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("pipelined=%v: %v", pipelined, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		if pipelined {
			io.WriteString(c, req("origin.test")+req("denied.test")+req("origin.test"))
			read()
			read()
			read()
		} else {
			for _, host := range []string{"origin.test", "denied.test", "origin.test"} {
				io.WriteString(c, req(host))
				read()
			}
		}
		if want := []int{200, 403, 200}; !equalInts(codes, want) {
			t.Errorf("pipelined=%v: statuses %v, want %v", pipelined, codes, want)
		}
		if got := o.hits.Load() - before; got != 2 {
			t.Errorf("pipelined=%v: origin served %d requests, want 2", pipelined, got)
		}
		c.Close()
	}
}

// TestUpstreamReuseAudit: requests on kept-alive upstream connections, a HEAD, a
// response without a length and an upload each get one exact record.
func TestUpstreamReuseAudit(t *testing.T) {
	body := strings.Repeat("z", 100000)
	o := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream": // no Content-Length: chunked to an HTTP/1.1 client
			io.WriteString(w, body[:500])
			w.(http.Flusher).Flush()
			io.WriteString(w, body[500:1000])
		case "/upload":
			n, _ := io.Copy(io.Discard, r.Body)
			io.WriteString(w, strings.Repeat("u", int(n%7)))
		default:
			io.WriteString(w, body)
		}
	})
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	c := h.unixClient(t, nil)
	base := "http://origin.test:" + o.port()
	for i := 0; i < 3; i++ {
		if code, got := get(t, c, base+"/big"); code != 200 || got != body {
			t.Fatalf("GET /big: %d, %d bytes", code, len(got))
		}
	}
	if code, got := get(t, c, base+"/stream"); code != 200 || got != body[:1000] {
		t.Fatalf("GET /stream: %d %q", code, got)
	}
	resp, err := c.Head(base + "/big")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = c.Post(base+"/upload", "text/plain", strings.NewReader("123456789"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctxShutdown(t, h)
	recs := readRecords(t, h.logFile(t))
	want := []struct {
		method, path string
		down, up     int64
	}{
		{"GET", "/big", 100000, 0}, {"GET", "/big", 100000, 0}, {"GET", "/big", 100000, 0},
		{"GET", "/stream", 1000, 0}, {"HEAD", "/big", 0, 0}, {"POST", "/upload", 2, 9},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if r.Method != w.method || r.Path != w.path || r.BytesDown != w.down || r.BytesUp != w.up || r.Status != 200 || r.Decision != audit.DecisionAllow || r.Rule != "origin.test" {
			t.Errorf("record %d: %+v, want %s %s down %d up %d, allowed by origin.test", i, r, w.method, w.path, w.down, w.up)
		}
	}
}

func ctxShutdown(t *testing.T, h *harness) {
	t.Helper()
	if err := h.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func readRecords(t *testing.T, path string) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Kind == audit.KindRequest {
			recs = append(recs, r)
		}
	}
	return recs
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUpstreamStaleKeptConn: a kept connection the origin closed while it idled is
// replaced, and the request still reaches the origin once.
func TestUpstreamStaleKeptConn(t *testing.T) {
	o := newOrigin(t, false, hello)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	c := h.unixClient(t, nil)
	u := "http://origin.test:" + o.port() + "/x"
	if code, _ := get(t, c, u); code != 200 {
		t.Fatalf("first: %d", code)
	}
	o.CloseClientConnections() // the proxy's kept connection among them
	if code, body := get(t, c, u); code != 200 || body != "hello" {
		t.Fatalf("after the origin closed the kept connection: %d %q", code, body)
	}
	if n := o.hits.Load(); n != 2 {
		t.Errorf("origin served %d requests, want 2", n)
	}
}

// TestUpstreamClientLeavesEarly: a client that leaves a large download closes the
// upstream connection and its handler ends; the proxy does not read the rest of the
// body. On the Unix socket the body is copied, on the TCP endpoint (the sandbox's)
// it is spliced.
func TestUpstreamClientLeavesEarly(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := map[bool]string{false: "copied to a unix client", true: "spliced to a tcp client"}[tcp]
		t.Run(name, func(t *testing.T) {
			ended := make(chan error, 1)
			o := newOrigin(t, false, func(w http.ResponseWriter, _ *http.Request) {
				buf := make([]byte, 256<<10)
				w.Header().Set("Content-Length", "1073741824")
				for range 4096 {
					if _, err := w.Write(buf); err != nil {
						ended <- err
						return
					}
				}
				ended <- nil
			})
			h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
			var c net.Conn
			if tcp {
				c = h.dialTCP(t)
			} else {
				c = h.dialUnix(t)
			}
			h.getRaw(t, c, "http://origin.test:"+o.port()+"/big")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %v", resp, err)
			}
			if _, err := io.CopyN(io.Discard, resp.Body, 4<<20); err != nil {
				t.Fatal(err)
			}
			c.Close()
			select {
			case err := <-ended:
				if err == nil {
					t.Fatal("the origin sent the whole body: the proxy drained it after the client left")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the origin is still sending 10 s after the client left")
			}
			if !eventually(t, 10*time.Second, func() bool { return h.srv.track.running() == 0 }) {
				t.Error("the handler still runs after the client left")
			}
		})
	}
}
