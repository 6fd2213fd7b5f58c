//go:build linux

package companion

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// The holder learns that the host is gone from the session's stream hanging up (the
// engine closes the exec's stdin), not from its data, which the proxy reads; it stops
// watching once the proxy has exited.
func TestWaitHangUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.Write([]byte("data the proxy reads")); err != nil {
		t.Fatal(err)
	}
	got := make(chan bool, 1)
	go func() { got <- waitHangUp(int(r.Fd()), make(chan struct{})) }()
	select {
	case <-got:
		t.Fatal("waitHangUp returned while the stream's writer was open")
	case <-time.After(100 * time.Millisecond):
	}
	w.Close()
	if !<-got {
		t.Error("a stream whose writer closed did not hang up")
	}

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	done := make(chan struct{})
	close(done)
	if waitHangUp(int(r2.Fd()), done) {
		t.Error("an open stream reported hung up")
	}
}

// TestDialHolderWaitsForItsListener: a session exec'd into a kept companion the
// engine has just started may dial the holder's socket before the holder listens;
// the dial is tried again within the limit instead of failing at once (seen as
// "the kept companion's holder does not answer (… connect: connection refused)").
func TestDialHolderWaitsForItsListener(t *testing.T) {
	addr := fmt.Sprintf("@devsandbox-test-hold-%d", os.Getpid())
	refused := make(chan struct{}, 1)
	holderRefused = func() {
		select {
		case refused <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { holderRefused = nil })
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := dialHolder(addr, time.Minute)
		done <- result{c, err}
	}()
	select {
	case <-refused: // the first dial found nothing listening
	case r := <-done:
		t.Fatalf("dialHolder returned before anything listened: %v, %v", r.c, r.err)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("dialHolder once the holder listens: %v", r.err)
	}
	r.c.Close()
	// Something other than a refusal is not tried again.
	start := time.Now()
	if _, err := dialHolder(t.TempDir()+"/none", time.Minute); err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("dialHolder of a socket file that does not exist: %v after %v, want an error at once", err, time.Since(start))
	}
}
