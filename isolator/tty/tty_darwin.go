package tty

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The requests that get and set a terminal's mode (struct termios).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// flushInput discards what the terminal fd received and nobody has read yet
// (TIOCFLUSH with FREAD, which is 1 in <sys/fcntl.h>).
func flushInput(fd uintptr) error {
	if err := unix.IoctlSetPointerInt(int(fd), unix.TIOCFLUSH, 1); err != nil {
		return fmt.Errorf("discarding the terminal's pending input: %w", err)
	}
	return nil
}
