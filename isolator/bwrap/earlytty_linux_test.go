package bwrap

import (
	"errors"
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
)

// TestAdoptableTerminal: an early start on a pty of its own (an interactive run's)
// is used only by a run that relays a terminal, and a run that relays one uses only
// such a start; an interactive plan with no terminal to relay uses none.
func TestAdoptableTerminal(t *testing.T) {
	pty, err := os.Open(os.DevNull) // stands for the master: only its presence counts
	if err != nil {
		t.Fatal(err)
	}
	defer pty.Close()
	cases := []struct {
		name          string
		master        *os.File
		tty, relays   bool
		wantAdoptable bool
	}{
		{"no terminal", nil, false, false, true},
		{"interactive on a pty", pty, true, true, true},
		{"interactive, the start on the inherited stdio", nil, true, true, false},
		{"the start on a pty, no terminal relayed", pty, false, false, false},
		{"interactive plan, nothing to relay", nil, true, false, false},
		{"interactive plan, nothing to relay, the start on a pty", pty, true, false, false},
	}
	for _, c := range cases {
		s := &earlyStart{master: c.master}
		err := s.adoptable(&isolator.Plan{TTY: c.tty}, &Spec{}, c.relays)
		if (err == nil) != c.wantAdoptable {
			t.Errorf("%s: adoptable = %v, want adoptable %v", c.name, err, c.wantAdoptable)
		}
		if err != nil && !errors.Is(err, prestart.ErrMismatch) {
			t.Errorf("%s: %v is not a mismatch", c.name, err)
		}
	}
}
