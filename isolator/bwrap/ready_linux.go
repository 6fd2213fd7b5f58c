package bwrap

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// readyPair is the socket pair the init reports readiness on. devsandbox's end is
// non-blocking and waited on in the runtime's netpoller, so no thread blocks in
// recvmsg while the sandbox starts (each blocked thread makes the runtime start
// another). It joins the poller only in wait, once bwrap is started: on a launch it
// is the first descriptor the poller gets, and setting the poller up (epoll_create1,
// an eventfd, two epoll_ctl) need not delay bwrap's exec.
type readyPair struct {
	hostFD int
	host   *os.File // set by wait
	child  *os.File
}

func newReadyPair() (*readyPair, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating the readiness socket: %w", err)
	}
	err = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	if err == nil {
		// O_NONBLOCK is the open file's: the init's end stays blocking.
		err = unix.SetNonblock(fds[0], true)
	}
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("creating the readiness socket: %w", err)
	}
	return &readyPair{hostFD: fds[0], child: os.NewFile(uintptr(fds[1]), "ready")}, nil
}

// goAhead sends the init its go-ahead (wire.AwaitGoArg). The socket is empty (the
// init writes only after it), so the send does not block.
func (r *readyPair) goAhead() error {
	for {
		err := unix.Sendto(r.hostFD, []byte{wire.GoByte}, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readiness is what the init reported: its pid in the host's namespace and, where
// the kernel has pidfds, a pidfd of it (gone: see there) and one of the command
// (cmdPidfd; nil when the command was gone before the report, or from an init
// before it sent one), or why the sandbox could not be completed.
type readiness struct {
	pid      int
	pidfd    *os.File
	cmdPidfd *os.File
	failure  string
}

// gone returns a channel closed once the init has exited, or nil when the init sent
// no pidfd. The init is the sandbox's pid 1: when it has exited, the kernel has
// killed and reaped every other process of its pid namespace, so nothing the sandbox
// ran is left; bwrap, its parent, learns it at the same time and exits after.
//
// The goroutine that sees the exit runs before (when not nil) first, then closes the
// channel, then runs after (when not nil): it is running already, so before starts
// without waiting for another thread, and nothing it would wake (the channel's
// receiver) takes the CPU from it first. The pidfd is closed last; the receiver may
// close it earlier (os.File's second Close does nothing).
func (r readiness) gone(before, after func()) <-chan struct{} {
	if r.pidfd == nil {
		return nil
	}
	c := make(chan struct{})
	go func() {
		defer r.pidfd.Close() // after c is closed: its epoll_ctl and close wait for nothing
		if waitExited(r.pidfd) {
			if before != nil {
				before()
			}
			close(c)
			if after != nil {
				after()
			}
		}
	}()
	return c
}

// waitExited waits until the process of pidfd has exited and returns true, or
// returns false as soon as the pidfd cannot tell (then only bwrap's exit says that
// the sandbox is gone).
func waitExited(pidfd *os.File) bool {
	rc, err := pidfd.SyscallConn()
	if err != nil {
		return false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		var perr error
		exited, perr = pidfdExited(fd)
		return exited || perr != nil
	})
	return err == nil && exited
}

// pidfdExited reports whether the process of the pidfd fd has exited (the pidfd is
// readable then).
func pidfdExited(fd uintptr) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0, err
}

// wait blocks until the init reports or every copy of the child end is closed. A zero
// pid means the command never started. A listener the init hands on the way (just
// before its report; wire.ListenerMsg) goes to onListener, which must close it.
func (r *readyPair) wait(onListener func(*os.File)) readiness {
	r.host = os.NewFile(uintptr(r.hostFD), "ready") // non-blocking: joins the poller
	rc, err := r.host.SyscallConn()
	if err != nil {
		return readiness{}
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(2*4))
	for {
		var n, oobn int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			for {
				n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
				if !errors.Is(rerr, unix.EINTR) {
					return !errors.Is(rerr, unix.EAGAIN)
				}
			}
		}); err != nil || rerr != nil || n == 0 {
			return readiness{}
		}
		cred, fds := control(oob[:oobn])
		if n == 1 && buf[0] == wire.ListenerMsg && len(fds) == 1 {
			onListener(os.NewFile(uintptr(fds[0]), "proxy listener"))
			continue
		}
		var pidfd, cmdPidfd *os.File
		if n == 1 && buf[0] == 'R' && cred != nil && (len(fds) == 1 || len(fds) == 2) {
			pidfd = os.NewFile(uintptr(fds[0]), "init pidfd")
			if len(fds) == 2 {
				cmdPidfd = os.NewFile(uintptr(fds[1]), "command pidfd")
			}
			fds = nil
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		if buf[0] == 'F' {
			return readiness{failure: string(buf[1:n])}
		}
		if cred == nil {
			return readiness{}
		}
		return readiness{pid: int(cred.Pid), pidfd: pidfd, cmdPidfd: cmdPidfd}
	}
}

// control returns the credentials and the descriptors of a message's control data.
func control(oob []byte) (*unix.Ucred, []int) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, nil
	}
	var cred *unix.Ucred
	var fds []int
	for i := range msgs {
		if c, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			cred = c
		} else if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return cred, fds
}

// close closes devsandbox's end; wait must have returned, or never been called.
func (r *readyPair) close() {
	if r.host != nil {
		r.host.Close()
		return
	}
	unix.Close(r.hostFD)
}
