package tty

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// State is what a process holding a descriptor of a terminal can change of it for
// those who use it next, saved so that it can be put back: its modes (termios), its
// window size, its exclusive mode (TIOCEXCL: later opens fail), its output stopped
// by TCOOFF, and its file mode (chmod by its owner). For a run whose command is
// given the user's terminal as its input (not relayed): the command may change
// them while it runs (a password prompt turns echo off); Restore undoes what is
// left once it has ended.
type State struct {
	fd   int
	tio  unix.Termios
	size unix.Winsize
	// hasSize: the terminal reported a window size.
	hasSize bool
	excl    bool
	mode    uint32
}

// SaveState saves the state of the terminal fd. fd must stay open until Restore.
func SaveState(fd uintptr) (*State, error) {
	s := &State{fd: int(fd)}
	tio, err := unix.IoctlGetTermios(s.fd, ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("getting the terminal's mode: %w", err)
	}
	s.tio = *tio
	if ws, err := unix.IoctlGetWinsize(s.fd, unix.TIOCGWINSZ); err == nil {
		s.size, s.hasSize = *ws, true
	}
	s.excl = exclusive(s.fd)
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err != nil {
		return nil, fmt.Errorf("reading the terminal's file mode: %w", err)
	}
	s.mode = st.Mode & 0o7777
	return s, nil
}

// exclusive reports whether fd's terminal is in exclusive mode (TIOCGEXCL, Linux
// 3.8); false where the kernel cannot tell.
func exclusive(fd int) bool {
	v, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL)
	return err == nil && v != 0
}

// Restore puts back what differs from the saved state, and restarts output a
// TCOOFF stopped (TCOON, which leaves output the user stopped with Ctrl-S as it
// is). It changes nothing that is as it was, so a command that left the terminal
// alone costs a few reads. The mode is set even when this process is in a
// background process group of the terminal (the user put the run in the
// background): there, a change would otherwise stop it (SIGTTOU) at its end, and
// what the command left is no better for the foreground than what was saved.
func (s *State) Restore() error {
	var errs []error
	// Blocking SIGTTOU on this thread makes the kernel allow the changes from a
	// background process group instead of stopping the process.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ttou, old unix.Sigset_t
	ttou.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &ttou, &old); err != nil {
		return fmt.Errorf("blocking SIGTTOU to restore the terminal: %w", err)
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	if tio, err := unix.IoctlGetTermios(s.fd, ioctlGetTermios); err != nil || *tio != s.tio {
		if err := unix.IoctlSetTermios(s.fd, ioctlSetTermios, &s.tio); err != nil {
			errs = append(errs, fmt.Errorf("restoring the terminal's mode: %w", err))
		}
	}
	if s.hasSize {
		if ws, err := unix.IoctlGetWinsize(s.fd, unix.TIOCGWINSZ); err != nil || *ws != s.size {
			if err := unix.IoctlSetWinsize(s.fd, unix.TIOCSWINSZ, &s.size); err != nil {
				errs = append(errs, fmt.Errorf("restoring the terminal's window size: %w", err))
			}
		}
	}
	if !s.excl && exclusive(s.fd) {
		if err := unix.IoctlSetInt(s.fd, unix.TIOCNXCL, 0); err != nil {
			errs = append(errs, fmt.Errorf("ending the terminal's exclusive mode: %w", err))
		}
	}
	if err := unix.IoctlSetInt(s.fd, unix.TCXONC, unix.TCOON); err != nil {
		errs = append(errs, fmt.Errorf("restarting the terminal's output: %w", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err == nil && st.Mode&0o7777 != s.mode {
		if err := unix.Fchmod(s.fd, s.mode); err != nil {
			errs = append(errs, fmt.Errorf("restoring the terminal's file mode %#o: %w", s.mode, err))
		}
	}
	return errors.Join(errs...)
}
