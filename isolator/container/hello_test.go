package container

import (
	"bytes"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestHelloOneStream: the hello asks for one stream when the run's stdout and stderr
// are one destination and the command has no terminal of its own (a pty is one
// stream already); not when they are two.
func TestHelloOneStream(t *testing.T) {
	var one, two bytes.Buffer
	for _, c := range []struct {
		name  string
		tty   bool
		stdio isolator.Stdio
		want  bool
	}{
		{"one writer", false, isolator.Stdio{Out: &one, Err: &one}, true},
		{"two writers", false, isolator.Stdio{Out: &one, Err: &two}, false},
		{"one writer, a terminal of its own", true, isolator.Stdio{Out: &one, Err: &one}, false},
		{"no writers", false, isolator.Stdio{}, false},
	} {
		h, err := Hello(&isolator.Plan{TTY: c.tty}, c.stdio)
		if err != nil {
			t.Fatal(err)
		}
		if h.OneStream != c.want || h.TTY != c.tty {
			t.Errorf("%s: hello OneStream %v TTY %v, want %v and %v", c.name, h.OneStream, h.TTY, c.want, c.tty)
		}
	}
}
