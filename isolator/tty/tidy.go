package tty

import (
	"fmt"
	"io"
	"sync"
)

// Tidy is the writer to the user's terminal for a backend that copies a command's
// output itself (docker, krun): it follows what the command writes there, as the
// Relay does, and Finish puts back what the command left in the terminal emulator.
// Like the Relay, it passes the output through a Filter.
// Write and Finish may be called concurrently (output still in flight at the end).
type Tidy struct {
	mu  sync.Mutex
	w   io.Writer
	g   screenGuard
	f   *Filter
	buf []byte
}

// NewTidy returns a Tidy writing to w, the user's terminal, through a Filter with
// opts.
func NewTidy(w io.Writer, opts FilterOptions) *Tidy { return &Tidy{w: w, f: NewFilter(opts)} }

// Write filters p, follows what is left and writes it to the terminal. It reports
// all of p written when what is left was.
func (t *Tidy) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.f.Append(t.buf[:0], p)
	if len(t.buf) == 0 {
		return len(p), nil
	}
	t.g.observe(t.buf)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Finish ends a string the command left open (the filter's Flush), writes the
// sequences that turn off the modes the command left on (nothing
// for a command that cleaned up), and, when the command sent a query, discards the
// terminal's pending input (inFd): the answers that have arrived. Unlike the Relay
// it does not wait for answers still on their way: the backend's copy of the user's
// input may still be reading the terminal and would take them.
func (t *Tidy) Finish(inFd uintptr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	// End a string the command left open, so the resets are not read as its text.
	if t.buf = t.f.Flush(t.buf[:0]); len(t.buf) > 0 {
		if _, err := t.w.Write(t.buf); err != nil {
			return fmt.Errorf("resetting the terminal: %w", err)
		}
	}
	if b := t.g.resets(); len(b) > 0 {
		if _, err := t.w.Write(b); err != nil {
			return fmt.Errorf("resetting the terminal: %w", err)
		}
	}
	t.g.reset()
	if t.g.queried {
		t.g.queried = false
		return flushInput(inFd)
	}
	return nil
}
