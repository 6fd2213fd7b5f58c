package tty

import "golang.org/x/sys/unix"

// The requests that get and set a terminal's mode (struct termios).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
