package handoff

import (
	"os"

	"golang.org/x/sys/unix"
)

// saveTerminal records the terminal's mode so it is restored even when the program
// dies in raw mode. A mode that did not change is left alone: setting it from the
// background (a run started with &) would stop devsandbox (SIGTTOU).
func saveTerminal(f *os.File) func() {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return nil
	}
	return func() {
		if now, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil && *now == *t {
			return
		}
		_ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
	}
}
