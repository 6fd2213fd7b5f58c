// Package accept is the accept loop every listener of devsandbox's serves with: the
// host's publish relay and ssh agent relay, the ssh agent's carrier in a container, the engine companion's published ports,
// the in-sandbox forwarders and the keeper's registrations. Accept fails while the
// process is out of descriptors (EMFILE, ENFILE) or memory, and such an error passes:
// retried at once it spins a core until it does. Loop waits before each retry of a
// failed Accept, as net/http's server does, and ends only when the listener is
// closed.
package accept

import (
	"errors"
	"net"
	"time"
)

// First and Max bound the pause before Accept is retried after a failure: it starts
// at First, doubles with each failure in a row up to Max, and starts again from First
// after a success. So a listener that keeps failing is retried at most about ten times
// in its first second, and once a second after that.
const (
	First = 5 * time.Millisecond
	Max   = time.Second
)

// Backoff is the pause before the next retry of a failed Accept. The zero value is
// ready; it is not safe for concurrent use.
type Backoff struct{ delay time.Duration }

// Failed returns the pause before the retry of an Accept that just failed.
func (b *Backoff) Failed() time.Duration {
	b.delay = min(max(2*b.delay, First), Max)
	return b.delay
}

// Reset starts the pauses again from First: an Accept succeeded.
func (b *Backoff) Reset() { b.delay = 0 }

// Loop accepts connections on ln and passes each to handle, on Loop's goroutine
// (handle starts one of its own for a connection it serves), until ln is closed
// (net.ErrClosed) or handle returns false. A failed Accept is retried after
// Backoff's pause.
func Loop(ln net.Listener, handle func(net.Conn) bool) { loop(ln, handle, time.Sleep) }

func loop(ln net.Listener, handle func(net.Conn) bool, sleep func(time.Duration)) {
	var b Backoff
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			sleep(b.Failed())
			continue
		}
		b.Reset()
		if !handle(c) {
			return
		}
	}
}
