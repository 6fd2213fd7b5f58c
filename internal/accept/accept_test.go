package accept

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// failing is a listener whose Accept fails with EMFILE fails times, then returns
// conns connections, then fails fails times again, then reports itself closed.
type failing struct {
	mu           sync.Mutex
	fails, conns int
	phase        int // 0: failing, 1: accepting, 2: failing again, 3: closed
	n            int
	accepts      int
}

func (l *failing) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepts++
	for {
		switch {
		case l.phase == 3:
			return nil, net.ErrClosed
		case l.phase != 1 && l.n < l.fails, l.phase == 1 && l.n < l.conns:
			l.n++
			if l.phase == 1 {
				c, _ := net.Pipe()
				return c, nil
			}
			return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
		default:
			l.phase, l.n = l.phase+1, 0
		}
	}
}

func (l *failing) Close() error   { return nil }
func (l *failing) Addr() net.Addr { return &net.TCPAddr{} }

// An Accept that keeps failing is retried after pauses that double from First to
// Max: at most about ten tries in the first second (on a clock the sleeps advance),
// then one a second. A success resets the pauses, and the loop serves the
// connections that come once Accept recovers, and ends when the listener is closed.
func TestLoopBacksOff(t *testing.T) {
	l := &failing{fails: 30, conns: 3}
	var now time.Duration // the clock the sleeps advance
	var pauses []time.Duration
	served := 0
	loop(l, func(c net.Conn) bool { c.Close(); served++; return true }, func(d time.Duration) {
		pauses = append(pauses, d)
		now += d
	})
	if served != 3 {
		t.Errorf("served %d connections once Accept recovered, want 3", served)
	}
	if len(pauses) != 60 {
		t.Fatalf("%d pauses for 60 failures", len(pauses))
	}
	// Tries per second of the clock, in the first run of failures.
	var at time.Duration
	perSecond := map[int]int{}
	for _, d := range pauses[:30] {
		perSecond[int(at/time.Second)]++
		at += d
	}
	for s, n := range perSecond {
		if (s == 0 && n > 10) || (s > 0 && n > 2) {
			t.Errorf("%d retries in second %d of failures: %v", n, s, perSecond)
		}
	}
	for i, d := range pauses {
		want := min(First<<(i%30), Max)
		if d != want {
			t.Errorf("pause %d: %v, want %v (doubling from %v to %v, from the start again after a success)", i, d, want, First, Max)
		}
	}
}

// handle returning false ends the loop; Loop itself really pauses (a few failures,
// then a connection, take at least the pauses' sum).
func TestLoopEnds(t *testing.T) {
	l := &failing{fails: 4, conns: 5}
	start := time.Now()
	served := 0
	Loop(l, func(c net.Conn) bool { c.Close(); served++; return served < 2 })
	if served != 2 || l.accepts != 6 {
		t.Errorf("served %d in %d accepts, want the loop to end at the second (6 accepts)", served, l.accepts)
	}
	if el, min := time.Since(start), (5+10+20+40)*time.Millisecond; el < min {
		t.Errorf("four failures took %v, want at least %v of pauses", el, min)
	}
}
