package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// TestNoLeakAfterThousandConnections opens 1,000 connections at once to the TCP
// endpoint — silent, half a header, unauthenticated, a plain request, a CONNECT tunnel
// — drops them all, and checks goroutines and fds come back to where they were.
func TestNoLeakAfterThousandConnections(t *testing.T) {
	o := newOrigin(t, false, hello)
	tlsOrigin := newOrigin(t, true, hello)
	h := newHarness(t, Config{
		Policy:   mustPolicy(t, []string{"origin.test", "tls.test"}, nil, "deny"),
		Resolver: loopback("origin.test", "tls.test"),
	})
	auth := "Proxy-Authorization: " + h.authHeader() + "\r\n"
	behaviours := []func(c net.Conn, br *bufio.Reader) error{
		func(net.Conn, *bufio.Reader) error { return nil }, // silent
		func(c net.Conn, _ *bufio.Reader) error { // half a request line
			_, err := io.WriteString(c, "GET http://origin.te")
			return err
		},
		func(c net.Conn, br *bufio.Reader) error { // no credential: 407
			return exchangeRaw(c, br, "GET http://origin.test:"+o.port()+"/ HTTP/1.1\r\nHost: origin.test\r\n\r\n", 407)
		},
		func(c net.Conn, br *bufio.Reader) error { // a forwarded request, connection kept alive
			return exchangeRaw(c, br, "GET http://origin.test:"+o.port()+"/ HTTP/1.1\r\nHost: origin.test\r\n"+auth+"\r\n", 200)
		},
		func(c net.Conn, br *bufio.Reader) error { // an open tunnel
			hp := "tls.test:" + tlsOrigin.port()
			return exchangeRaw(c, br, "CONNECT "+hp+" HTTP/1.1\r\nHost: "+hp+"\r\n"+auth+"\r\n", 200)
		},
	}
	run := func(n int) {
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		next := make(chan int)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					c, err := net.Dial("tcp", h.tcp)
					if err != nil {
						errs <- err
						continue
					}
					c.SetDeadline(time.Now().Add(30 * time.Second))
					conns[i] = c
					if err := behaviours[i%len(behaviours)](c, bufio.NewReader(c)); err != nil {
						errs <- fmt.Errorf("conn %d: %w", i, err)
					}
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d connections open: %d goroutines, %d fds", n, runtime.NumGoroutine(), fdCount(t))
		for _, c := range conns { // all open at once, now dropped
			if c != nil {
				c.Close()
			}
		}
	}
	settled := func(g, f int) bool {
		return eventually(t, 20*time.Second, func() bool {
			h.srv.tr.CloseIdleConnections() // the upstream pools are bounded, not a leak
			h.srv.up.closeIdle(false)
			return runtime.NumGoroutine() <= g && fdCount(t) <= f
		})
	}
	run(len(behaviours)) // warm up lazily started goroutines and pools
	settled(1<<30, 1<<30)
	if !eventually(t, 5*time.Second, func() bool {
		h.srv.tr.CloseIdleConnections()
		h.srv.up.closeIdle(false)
		return h.srv.track.running() == 0
	}) {
		t.Fatal("warm-up did not finish")
	}
	g0, f0 := runtime.NumGoroutine(), fdCount(t)

	t.Logf("before: %d goroutines, %d fds", g0, f0)
	run(1000)
	const slack = 5
	if !settled(g0+slack, f0+slack) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines %d (before %d), fds %d (before %d)\n%s",
			runtime.NumGoroutine(), g0, fdCount(t), f0, buf[:runtime.Stack(buf, true)])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after the storm: %v", err)
	}
}

// exchangeRaw writes req and reads a response head with the wanted status.
func exchangeRaw(c net.Conn, br *bufio.Reader, req string, want int) error {
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("status %d, want %d", resp.StatusCode, want)
	}
	if want != 200 || resp.ContentLength > 0 {
		io.Copy(io.Discard, resp.Body)
	}
	return nil
}
