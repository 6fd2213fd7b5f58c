package proxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// oddReader hands out src in reads of varying sizes, then err.
type oddReader struct {
	src    []byte
	err    error
	rng    *rand.Rand
	closed bool
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.src) == 0 {
		return 0, r.err
	}
	n := copy(p, r.src[:min(len(r.src), 1+r.rng.IntN(40_000))])
	r.src = r.src[n:]
	return n, nil
}

func (r *oddReader) Close() error { r.closed = true; return nil }

// TestReadAheadDelivers: every byte in order, through reads of any size and a ring
// that wraps, then the source's own error.
func TestReadAheadDelivers(t *testing.T) {
	want := make([]byte, 3*readAheadSize+777)
	for i := range want {
		want[i] = byte(i*31 + i>>9)
	}
	cut := errors.New("connection reset")
	for _, end := range []error{io.EOF, cut} {
		src := &oddReader{src: want, err: end, rng: rand.New(rand.NewPCG(1, 2))}
		ra := newReadAhead(src)
		rng := rand.New(rand.NewPCG(3, 4))
		var got []byte
		var err error
		for err == nil {
			p := make([]byte, 1+rng.IntN(70_000))
			var n int
			n, err = ra.Read(p)
			got = append(got, p[:n]...)
		}
		if !bytes.Equal(got, want) || err != end {
			t.Errorf("source ending in %v: %d bytes (equal: %t), then %v", end, len(got), bytes.Equal(got, want), err)
		}
		if cerr := ra.Close(); cerr != nil || !src.closed {
			t.Errorf("Close: %v, source closed: %t", cerr, src.closed)
		}
	}
}

// blockedReader's Read waits until Close, as a read from a stalled origin does until
// the transport closes its connection.
type blockedReader struct {
	reading chan struct{}
	closed  chan struct{}
}

func (r *blockedReader) Read([]byte) (int, error) {
	close(r.reading)
	<-r.closed
	return 0, errors.New("use of closed connection")
}

func (r *blockedReader) Close() error { close(r.closed); return nil }

// TestReadAheadCloseEndsRead: the consumer's Close ends the goroutine's read in
// progress and returns only when the goroutine is gone.
func TestReadAheadCloseEndsRead(t *testing.T) {
	src := &blockedReader{reading: make(chan struct{}), closed: make(chan struct{})}
	ra := newReadAhead(src)
	<-src.reading
	if err := ra.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ra.done:
	default:
		t.Error("Close returned with the reading goroutine still running")
	}
}
