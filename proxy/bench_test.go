package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// blob serves size bytes of zeros with their Content-Length, as a file download is.
func blob(size int64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		buf := make([]byte, 256<<10)
		for sent := int64(0); sent < size; sent += int64(len(buf)) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}
}

const benchSize = 64 << 20

// benchRaw sends a GET on conn (plain HTTP) and reads the whole body, b.N times.
func benchRaw(b *testing.B, dial func() (net.Conn, *bufio.Reader)) {
	b.SetBytes(benchSize)
	for b.Loop() {
		c, br := dial()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, resp.Body); n < benchSize {
			b.Fatalf("short body: %d", n)
		}
		c.Close()
	}
}

func BenchmarkDownloadDirect(b *testing.B) {
	o := newOrigin(b, false, blob(benchSize))
	benchRaw(b, func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", o.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		return c, bufio.NewReader(c)
	})
}

func BenchmarkDownloadTunnel(b *testing.B) {
	o := newOrigin(b, false, blob(benchSize))
	h := newHarness(b, Config{Policy: mustPolicy(b, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	benchRaw(b, func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			b.Fatal(err)
		}
		hp := "origin.test:" + o.port()
		io.WriteString(c, "CONNECT "+hp+" HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
		return c, br
	})
}

func BenchmarkDownloadForward(b *testing.B) {
	o := newOrigin(b, false, blob(benchSize))
	h := newHarness(b, Config{Policy: mustPolicy(b, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	c := h.unixClient(b, nil)
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := c.Get("http://origin.test:" + o.port() + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkDownloadForwardTCP is BenchmarkDownloadForward from a client on the TCP
// endpoint, the one a sandbox reaches: the body is spliced.
func BenchmarkDownloadForwardTCP(b *testing.B) {
	o := newOrigin(b, false, blob(benchSize))
	h := newHarness(b, Config{Policy: mustPolicy(b, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	pu, _ := url.Parse(h.srv.Env()["HTTP_PROXY"])
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := c.Get("http://origin.test:" + o.port() + "/")
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, resp.Body); n != benchSize {
			b.Fatalf("short body: %d", n)
		}
		resp.Body.Close()
	}
}

// benchSmall sends a small GET on a new connection each (as curl does with
// Connection: close) and reads the response, b.N times.
func benchSmall(b *testing.B, dial func() net.Conn, target string) {
	for b.Loop() {
		c := dial()
		io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		c.Close()
	}
}

func BenchmarkSmallDirect(b *testing.B) {
	o := newOrigin(b, false, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	benchSmall(b, func() net.Conn {
		c, err := net.Dial("tcp", o.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		return c
	}, "/")
}

func BenchmarkSmallForward(b *testing.B) {
	o := newOrigin(b, false, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	h := newHarness(b, Config{Policy: mustPolicy(b, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	benchSmall(b, func() net.Conn {
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}, "http://origin.test:"+o.port()+"/")
}
