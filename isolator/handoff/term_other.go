//go:build !linux

package handoff

import (
	"os"

	"golang.org/x/sys/unix"
)

// saveTerminal records the terminal's mode so it is restored even when the program
// dies in raw mode.
func saveTerminal(f *os.File) func() {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	if err != nil {
		return nil
	}
	return func() { _ = unix.IoctlSetTermios(int(f.Fd()), unix.TIOCSETA, t) }
}
