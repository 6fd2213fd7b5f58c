//go:build linux

package companion

import (
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
