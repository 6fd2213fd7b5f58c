// Package flock waits for an flock(2) lock without tying its caller to the wait: a
// run that waits for another process's lock must still end when its context ends or
// a signal asks it to, and once it has given up it must not take the lock after all.
//
// The wait asks for the lock without blocking (LOCK_NB), again and again, with a pause
// between the tries that starts at 1 ms and doubles up to 20 ms. It blocks in no
// system call: a caller that gives up gets Take's answer at once, and nothing of the
// wait is left (no goroutine, no descriptor, no lock taken later). A blocking flock(2)
// cannot be given up that way: the thread stays in the kernel until the lock comes
// (Go installs its signal handlers with SA_RESTART, so a signal does not end the call,
// and closing the descriptor does not either), so the lock is taken after the caller
// left and held until someone notices, and a lock file removed meanwhile may be made
// anew.
//
// What the tries cost, and what is not guaranteed (measured on a 2-core VM, load 3–5):
//   - Latency: the lock is taken at most 20 ms after its release, plus scheduling (40
//     waits of 100–373 ms: median 11 ms, at most 19.4 ms); a blocking waiter would
//     have it at once.
//   - CPU: a long wait tries about 50 times a second. A try that finds the lock held
//     is an open, an flock and a close, about 3.5 µs (BenchmarkTryHeld); the wake-up
//     of an otherwise idle process costs more: a 5 s wait used 75 ms of CPU (1.5% of a
//     core; the same 5 s idle, 1 ms; with a 50 ms cap, 36 ms).
//   - Fairness: none. A process blocked in flock(2) on the same file (a devsandbox
//     built before this package polled, or another program) is woken by the kernel at
//     the release and usually takes the lock before the next try; a stream of such
//     waiters can keep a polling one waiting. Pollers among themselves take the lock
//     in no particular order.
package flock

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The pause between two tries: it doubles from firstPause up to maxPause, which bounds
// the latency after a release and sets the rate of a long wait's tries. The waits are
// short and rare (one podman create call, a prune's removal), so the latency counts
// for more than the wake-ups: 50 ms would halve those and double this.
const (
	firstPause = time.Millisecond
	maxPause   = 20 * time.Millisecond
)

// ErrInterrupted is the error of a wait that interrupt ended.
var ErrInterrupted = errors.New("interrupted")

// Take takes a lock through try, which opens the lock file and flocks it without
// waiting (LOCK_NB): an error matching unix.EWOULDBLOCK while another process holds
// it. While the lock is held elsewhere, waiting (nil: none) is called once, then Take
// tries again after each pause until try returns anything else (returned as is), ctx
// ends (its cause is returned) or interrupt yields (ErrInterrupted). Take calls try
// only from the calling goroutine and never after it has returned: when it returns an
// error, nothing of the wait is left.
func Take[T any](ctx context.Context, try func() (*os.File, error), waiting func(), interrupt <-chan T) (*os.File, error) {
	f, err := try()
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return f, err
	}
	if waiting != nil {
		waiting()
	}
	pause := firstPause
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-interrupt:
			return nil, ErrInterrupted
		case <-t.C:
		}
		// The pause and an end at once: select picked either, and the end wins, so a
		// caller that gave up gets no lock.
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-interrupt:
			return nil, ErrInterrupted
		default:
		}
		f, err := try()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return f, err
		}
		pause = min(2*pause, maxPause)
		t.Reset(pause)
	}
}
