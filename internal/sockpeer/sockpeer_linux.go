package sockpeer

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Listener is the process listening on a Unix socket, as the kernel named it when a
// connection to that socket was made. Close it when done (it may hold a pidfd).
type Listener struct {
	// Pid is the pid of the process that called listen(2), in this PID namespace; 0
	// (or less) when it runs in one this namespace does not see. That process may
	// since have left the socket to another and exited, its number then anyone's:
	// Root tells.
	Pid int32
	// Uid and Gid are that process's, at listen(2).
	Uid, Gid uint32

	pidfd    int   // a pidfd of that process (SO_PEERPIDFD, Linux 6.5), -1 when none
	pidfdErr error // why there is none; nil for an older kernel (ENOPROTOOPT)
}

// Of asks who listens at the other end of fd, a Unix socket connected to a listening
// one. Its error is SO_PEERCRED's; SO_PEERPIDFD's is kept for Root, so that a caller
// that does not judge this listener (another user's) is not refused for it.
func Of(fd int) (*Listener, error) { return of(fd, peerPidfd) }

// of is Of with SO_PEERPIDFD's reading given (tests give an older kernel's).
func of(fd int, pidfdOf func(fd int) (int, error)) (*Listener, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, err
	}
	l := &Listener{Pid: cred.Pid, Uid: cred.Uid, Gid: cred.Gid, pidfd: -1}
	pidfd, err := pidfdOf(fd)
	switch {
	case err == nil:
		l.pidfd = pidfd
	case errors.Is(err, unix.ENOPROTOOPT):
		// An older kernel: the pid is read as it is.
	default:
		l.pidfdErr = err
	}
	return l, nil
}

// peerPidfd reads SO_PEERPIDFD of fd.
func peerPidfd(fd int) (int, error) { return unix.GetsockoptInt(fd, unix.SOL_SOCKET, soPeerPidfd) }

// soPeerPidfd is SO_PEERPIDFD (asm-generic, as on amd64 and arm64): a pidfd of the
// process whose credentials SO_PEERCRED gives.
const soPeerPidfd = 77

// Pidfd is a pidfd of the listener's process (SO_PEERPIDFD's), for signalling that
// very process however its pid is reused; -1 on an older kernel. It stays l's: do
// not use it after Close.
func (l *Listener) Pidfd() int { return l.pidfd }

// Exited reports whether the listener's process is known to have exited, its pid
// then anyone's: what was read at the pid before a false answer was its own. An
// older kernel's (no pidfd) is never known to have exited. Only ESRCH tells: another
// user's process (root's dockerd, asked by a user) answers the probe with EPERM
// while it runs.
func (l *Listener) Exited() bool {
	if errors.Is(l.pidfdErr, unix.ESRCH) {
		return true
	}
	return l.pidfd >= 0 && errors.Is(unix.PidfdSendSignal(l.pidfd, 0, nil, 0), unix.ESRCH)
}

// Close releases the listener's pidfd. Safe to call more than once.
func (l *Listener) Close() {
	if l.pidfd >= 0 {
		unix.Close(l.pidfd)
		l.pidfd = -1
	}
}

// Root is where a listener runs as to this process's root directory.
type Root int

const (
	// SameRoot: the listener's root directory is this process's.
	SameRoot Root = iota + 1
	// OtherRoot: it runs in another root directory, as a sandbox's process does.
	OtherRoot
	// Unseen: it runs in a PID namespace this one does not see (Pid 0), so its
	// root directory cannot be told.
	Unseen
	// Exited: the process that listened has exited and left the socket to another,
	// whose root directory cannot be told; what its pid names now is anyone's.
	Exited
	// Unreadable: its root directory cannot be read (another user's process, /proc
	// hidden); Root's error says why.
	Unreadable
)

// Root tells where the listener runs as to this process's root directory, reading
// /proc at proc (tests give another). The root directory is read at the listener's
// pid; with a pidfd of it (Linux 6.5), the process must still run once that is read,
// so that what was read is its own and not a later process's that took the number.
// An older kernel's listener is judged by its pid alone.
//
// It returns Unreadable with the reason, and 0 with an error when it cannot judge
// at all (SO_PEERPIDFD failed, this process's own root directory cannot be read).
func (l *Listener) Root(proc string) (Root, error) {
	switch {
	case errors.Is(l.pidfdErr, unix.ESRCH):
		return Exited, nil
	case l.pidfdErr != nil:
		return 0, l.pidfdErr
	case l.Pid <= 0:
		return Unseen, nil
	}
	var ours, theirs unix.Stat_t
	if err := unix.Stat(proc+"/self/root/", &ours); err != nil {
		return 0, fmt.Errorf("reading this process's root directory: %w", err)
	}
	if err := unix.Stat(proc+"/"+strconv.Itoa(int(l.Pid))+"/root/", &theirs); err != nil {
		return Unreadable, err
	}
	if l.pidfd >= 0 && unix.PidfdSendSignal(l.pidfd, 0, nil, 0) != nil {
		return Exited, nil
	}
	if theirs.Dev != ours.Dev || theirs.Ino != ours.Ino {
		return OtherRoot, nil
	}
	return SameRoot, nil
}
