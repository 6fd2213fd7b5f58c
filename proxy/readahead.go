package proxy

import (
	"io"
	"net/http"
	"sync"
)

// readAheadMin is the smallest sized body a decrypted response's relay reads ahead:
// below it the hand-off between two goroutines costs more than it can overlap.
const readAheadMin = 1 << 20

// readAheadSize bounds what a read-ahead body holds that its consumer has not taken.
const readAheadSize = 256 << 10

var readAheadBufs = sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}

// readsAhead says whether the relay of resp's body reads it in a goroutine of its own:
// a large sized body the transport returned as it is (not rewritten by redaction, not
// a protocol switch, whose body is the connection).
func readsAhead(resp *http.Response) bool {
	return resp.StatusCode != http.StatusSwitchingProtocols && resp.ContentLength >= readAheadMin &&
		resp.Body != nil && resp.Body != http.NoBody
}

// readAhead is a response body read, and decrypted, by its own goroutine into a
// bounded ring while the handler encrypts and writes what was read before: the two
// halves of a decrypted relay run side by side instead of in turn. Read returns what
// is buffered (waiting only when nothing is), then the source's error; nothing is
// read past readAheadSize bytes the consumer has not taken, so a client that stops
// reading stops the upstream reads too. Close closes the source (which ends a read
// in progress) and waits for the goroutine to end.
type readAhead struct {
	src  io.ReadCloser
	mu   sync.Mutex
	cond sync.Cond
	buf  []byte
	r, n int   // start and length of the unread bytes in buf (a ring)
	err  error // the source's error, returned after the buffered bytes
	stop bool  // the consumer closed the body
	done chan struct{}
}

func newReadAhead(src io.ReadCloser) *readAhead {
	ra := &readAhead{src: src, done: make(chan struct{})}
	ra.cond.L = &ra.mu
	bp := readAheadBufs.Get().(*[]byte)
	ra.buf = *bp
	go ra.fill(bp)
	return ra
}

// fill reads the source into the ring's free space until an error or the consumer's
// Close; it alone reads the source, and it returns the ring to the pool.
func (ra *readAhead) fill(bp *[]byte) {
	defer close(ra.done)
	defer readAheadBufs.Put(bp)
	ra.mu.Lock()
	for {
		for ra.n == len(ra.buf) && !ra.stop {
			ra.cond.Wait()
		}
		if ra.stop {
			ra.mu.Unlock()
			return
		}
		w := (ra.r + ra.n) % len(ra.buf)
		free := ra.buf[w:min(len(ra.buf), w+len(ra.buf)-ra.n)]
		ra.mu.Unlock()
		// The span [w, w+len(free)) is the goroutine's alone: the consumer reads only
		// the n bytes before it.
		k, err := ra.src.Read(free)
		ra.mu.Lock()
		ra.n += k
		if err != nil {
			ra.err = err
		}
		ra.cond.Broadcast()
		if err != nil {
			ra.mu.Unlock()
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for ra.n == 0 && ra.err == nil {
		ra.cond.Wait()
	}
	if ra.n == 0 {
		return 0, ra.err
	}
	k := copy(p, ra.buf[ra.r:min(len(ra.buf), ra.r+ra.n)])
	ra.r = (ra.r + k) % len(ra.buf)
	ra.n -= k
	ra.cond.Broadcast()
	return k, nil
}

// Close stops the reads: the source's Close ends a read in progress (the transport
// closes the connection of a body not read to its end).
func (ra *readAhead) Close() error {
	ra.mu.Lock()
	ra.stop = true
	ra.cond.Broadcast()
	ra.mu.Unlock()
	err := ra.src.Close()
	<-ra.done
	return err
}
