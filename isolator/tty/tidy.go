package tty

import (
	"fmt"
	"io"
	"sync"
)

// Tidy is the writer to the user's terminal for a backend that copies a command's
// output itself (docker, krun): it follows what the command writes there, as the
// Relay does, and Finish puts back what the command left in the terminal emulator.
// Write and Finish may be called concurrently (output still in flight at the end).
type Tidy struct {
	mu sync.Mutex
	w  io.Writer
	g  screenGuard
}

// NewTidy returns a Tidy writing to w, the user's terminal.
func NewTidy(w io.Writer) *Tidy { return &Tidy{w: w} }

// Write follows p and writes it to the terminal unchanged.
func (t *Tidy) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.g.observe(p)
	return t.w.Write(p)
}

// Finish writes the sequences that turn off the modes the command left on (nothing
// for a command that cleaned up), and, when the command sent a query, discards the
// terminal's pending input (inFd): the answers that have arrived. Unlike the Relay
// it does not wait for answers still on their way: the backend's copy of the user's
// input may still be reading the terminal and would take them.
func (t *Tidy) Finish(inFd uintptr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
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
