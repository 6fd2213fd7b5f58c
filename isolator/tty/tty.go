// Package tty allocates pseudo-terminals and relays a user's terminal to one,
// so an interactive sandboxed command gets a terminal of its own while the
// sandbox still runs it in a new session (the TIOCSTI defence).
//
// The host side calls Open, gives the slave to the sandbox as stdin, stdout
// and stderr, and runs a Relay between the user's terminal and the master.
// Inside the sandbox, an init that is a session leader calls TakeControl on the
// slave so shell job control works.
//
// Open and Relay are Linux-only; the other functions build on macOS too.
// Functions taking a file descriptor never take ownership of it. Note that
// (*os.File).Fd puts a pollable file, such as the master returned by Open, into
// blocking mode; use SyscallConn to reach the descriptor of a file that should
// keep deadlines working.
package tty

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether fd refers to a terminal.
func IsTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil
}

// Size is a terminal window size in character cells.
type Size struct {
	Rows, Cols uint16
}

// GetSize returns the window size of the terminal fd.
func GetSize(fd uintptr) (Size, error) {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return Size{}, fmt.Errorf("getting window size: %w", err)
	}
	return Size{Rows: ws.Row, Cols: ws.Col}, nil
}

// SetSize sets the window size of the terminal fd. On a pty master the kernel
// then sends SIGWINCH to the foreground process group of the slave.
func SetSize(fd uintptr, s Size) error {
	if err := unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: s.Rows, Col: s.Cols}); err != nil {
		return fmt.Errorf("setting window size: %w", err)
	}
	return nil
}

// MakeRaw puts the terminal fd into raw mode with cfmakeraw semantics: no
// line editing, echo, signal characters, or input and output translation;
// 8-bit characters; reads return as soon as one byte is available.
//
// The returned restore function puts back the mode fd had before. It may be
// called more than once; only the first call acts, later calls return its
// result. fd must stay open until restore has been called.
func MakeRaw(fd uintptr) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("getting terminal mode: %w", err)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(int(fd), ioctlSetTermios, &raw); err != nil {
		return nil, fmt.Errorf("setting raw mode: %w", err)
	}
	restore = sync.OnceValue(func() error {
		if err := unix.IoctlSetTermios(int(fd), ioctlSetTermios, old); err != nil {
			return fmt.Errorf("restoring terminal mode: %w", err)
		}
		return nil
	})
	return restore, nil
}

// ErrNotTerminal is returned by TakeControl when fd is not a terminal.
var ErrNotTerminal = errors.New("not a terminal")

// TakeControl makes the terminal fd the controlling terminal of the calling
// process and puts the caller's process group in the foreground on it.
//
// The caller must be a session leader without a controlling terminal (for
// example right after setsid, or the first process bwrap --new-session
// starts), and the terminal must not already be the controlling terminal of
// another session: TakeControl does not steal a terminal. So the host must not
// make the pty slave the controlling terminal of the process that starts the
// sandbox (no Setctty there).
func TakeControl(fd uintptr) error {
	if !IsTerminal(fd) {
		return fmt.Errorf("taking control of fd %d: %w", fd, ErrNotTerminal)
	}
	if err := unix.IoctlSetInt(int(fd), unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("making fd %d the controlling terminal: %w", fd, err)
	}
	if err := unix.IoctlSetPointerInt(int(fd), unix.TIOCSPGRP, unix.Getpgrp()); err != nil {
		return fmt.Errorf("setting the foreground process group: %w", err)
	}
	return nil
}
