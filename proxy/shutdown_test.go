package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

func TestShutdownWaitsAndFlushes(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	o := newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "late")
	})
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test")})
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := h.unixClient(t, nil).Get("http://origin.test:" + o.port() + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{resp.StatusCode, string(b), err}
	}()
	<-arrived
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- h.srv.Shutdown(ctx)
	}()
	// The listeners close at once: new connections are refused while the request runs.
	if !eventually(t, 5*time.Second, func() bool {
		c, err := net.Dial("unix", h.sock)
		if err == nil {
			c.Close()
		}
		return err != nil
	}) {
		t.Error("the Unix socket still accepts during shutdown")
	}
	if c, err := net.Dial("tcp", h.tcp); err == nil {
		c.Close()
		t.Error("the TCP port still accepts during shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v before the request finished", err)
	default:
	}
	close(release)
	if r := <-got; r.err != nil || r.code != 200 || r.body != "late" {
		t.Errorf("in-flight request: %+v", r)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	recs, err := audit.ReadLog(h.logDir, audit.LogFilter{})
	if err != nil || len(recs) != 1 || recs[0].Path != "/slow" || recs[0].Status != 200 || recs[0].BytesDown != 4 {
		t.Errorf("records after shutdown: %+v, %v", recs, err)
	}
}

func TestShutdownDeadlineCutsTunnels(t *testing.T) {
	target := newCountingListener(t)
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"echo.test"}, nil, "deny"), Resolver: loopback("echo.test")})
	c := h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "echo.test:"+target.port()); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := h.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel is still open after a cut-short shutdown")
	}
}

func TestSlowClientTimesOut(t *testing.T) {
	h := newHarness(t, Config{ReadHeaderTimeout: 100 * time.Millisecond})
	c := h.dialUnix(t)
	io.WriteString(c, "GET http://x.test/ HTTP/1.1\r\nHost: x") // never finished
	start := time.Now()
	if _, err := io.ReadAll(c); err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("slow client: %v after %v, want the connection closed", err, time.Since(start))
	}
}

func TestHeaderSizeLimit(t *testing.T) {
	h := newHarness(t, Config{MaxHeaderBytes: 4 << 10})
	c := h.dialUnix(t)
	io.WriteString(c, "GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(newReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%v %v, want 431", resp, err)
	}
}

func TestTunnelIdleTimeout(t *testing.T) {
	target := newCountingListener(t)
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"echo.test"}, nil, "deny"), Resolver: loopback("echo.test"),
		TunnelIdleTimeout: 300 * time.Millisecond,
	})
	c := h.dialUnix(t)
	_, _, br := rawConnect(t, c, "echo.test:"+target.port())
	// Traffic for longer than the idle timeout keeps the tunnel open…
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	buf := make([]byte, 1)
	for range 12 {
		<-tick.C
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatalf("tunnel closed while busy: %v", err)
		}
	}
	// …and silence closes it.
	start := time.Now()
	if _, err := br.ReadByte(); err == nil {
		t.Error("read a byte from an idle tunnel")
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("idle tunnel closed after %v, want about 300ms", d)
	}
}

func TestStalledReaderTimesOut(t *testing.T) {
	o := newOrigin(t, false, func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("z", 1<<20))
		for range 256 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	h := newHarness(t, Config{
		Policy: mustPolicy(t, []string{"origin.test"}, nil, "deny"), Resolver: loopback("origin.test"),
		TunnelIdleTimeout: 200 * time.Millisecond,
	})
	c := h.dialUnix(t)
	io.WriteString(c, "GET http://origin.test:"+o.port()+"/big HTTP/1.1\r\nHost: origin.test\r\n\r\n")
	c.Read(make([]byte, 1024)) // the head and a little body, then nothing more
	if !eventually(t, 10*time.Second, func() bool { return h.srv.track.running() == 0 }) {
		t.Error("the handler still runs for a client that stopped reading")
	}
}
