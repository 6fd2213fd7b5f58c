package bwrap

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
	"github.com/devsandbox/devsandbox/isolator/tty"
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

// TestTerminalShape: each shape of terminals on the standard descriptors keys its
// records apart; interactive runs keep the key they had.
func TestTerminalShape(t *testing.T) {
	for _, c := range []struct {
		term [3]bool
		want string
	}{
		{[3]bool{}, ""},
		{[3]bool{true, true, true}, "interactive"},
		{[3]bool{true, true, false}, "interactive"},
		{[3]bool{false, true, true}, "terminal out err"},
		{[3]bool{false, false, true}, "terminal err"},
		{[3]bool{false, true, false}, "terminal out"},
		{[3]bool{true, false, false}, "terminal in"},
		{[3]bool{true, false, true}, "terminal in err"},
	} {
		if got := terminalShape(c.term); got != c.want {
			t.Errorf("terminalShape(%v) = %q, want %q", c.term, got, c.want)
		}
	}
}

// TestSameTerminals: Run adopts an early start only for the descriptors it was
// started with, each a terminal as it was then.
func TestSameTerminals(t *testing.T) {
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	other, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cases := []struct {
		name  string
		std   [3]*os.File
		shape [3]bool
		stdio isolator.Stdio
		ok    bool
	}{
		{"no terminal", [3]*os.File{null, null, null}, [3]bool{}, isolator.Stdio{In: null, Out: null, Err: null}, true},
		{"output terminals", [3]*os.File{null, slave, slave}, [3]bool{false, true, true}, isolator.Stdio{In: null, Out: slave, Err: slave}, true},
		{"another stdout", [3]*os.File{null, slave, slave}, [3]bool{false, true, true}, isolator.Stdio{In: null, Out: other, Err: slave}, false},
		{"a writer for stderr", [3]*os.File{null, null, null}, [3]bool{}, isolator.Stdio{In: null, Out: null, Err: &strings.Builder{}}, false},
		{"a terminal now", [3]*os.File{null, slave, null}, [3]bool{}, isolator.Stdio{In: null, Out: slave, Err: null}, false},
		{"no terminal now", [3]*os.File{null, null, null}, [3]bool{false, true, false}, isolator.Stdio{In: null, Out: null, Err: null}, false},
	}
	for _, c := range cases {
		s := &earlyStart{std: c.std, shape: c.shape}
		err := s.sameTerminals(c.stdio)
		if (err == nil) != c.ok {
			t.Errorf("%s: sameTerminals = %v, want ok %v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, prestart.ErrMismatch) {
			t.Errorf("%s: %v is not a mismatch", c.name, err)
		}
	}
}
