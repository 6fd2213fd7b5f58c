package container

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// PlainOut filters exactly the writers that are terminals: a pipe gets the
// command's bytes unchanged, a terminal gets them filtered; each stream its own.
func TestPlainOut(t *testing.T) {
	const attack = "\x1b]52;c;eA==\x07\x1b[21t\x1b[1mkept\x1b[m"
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()

	for _, c := range []struct {
		name          string
		out, err      *os.File
		outTerm, errT bool
	}{
		{"stdout terminal, stderr pipe", slave, pw, true, false},
		{"stdout pipe, stderr terminal", pw, slave, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			report := wire.NewReport(c.err)
			out, flush := PlainOut(c.out, report, tty.FilterOptions{})
			if _, ok := out.(*os.File); ok == c.outTerm {
				t.Errorf("stdout writer %T; filtered want %v", out, c.outTerm)
			}
			if _, ok := report.Out.(*os.File); ok == c.errT {
				t.Errorf("stderr writer %T; filtered want %v", report.Out, c.errT)
			}
			flush()
		})
	}
	slave.Close()

	// The bytes through a pipe are the command's.
	report := wire.NewReport(io.Discard)
	out, flush := PlainOut(pw, report, tty.FilterOptions{})
	if _, err := out.Write([]byte(attack)); err != nil {
		t.Fatal(err)
	}
	flush()
	pw.Close()
	got, _ := io.ReadAll(pr)
	if !bytes.Equal(got, []byte(attack)) {
		t.Errorf("pipe got %q, want %q", got, attack)
	}
}
