package service

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A Trigger starts the session proxy on demand: it watches listening sockets, and the
// first connection pending on any of them fires it. Until then no proxy process runs
// (a run whose command never connects pays nothing for it); a connection made before
// the proxy runs waits in the listener's backlog, where the proxy accepts it once it
// has started, under the same policy as every later one.
//
// A Trigger holds its own duplicates of the watched sockets and closes them once it
// fires or is closed; watching never accepts, so every connection reaches the proxy.
// Its methods may be called from any goroutine.
type Trigger struct {
	mu   sync.Mutex
	fds  []int // duplicates of the watched listeners
	done bool  // fired or closed: nothing more is watched
	// The wake pipe interrupts the wait's poll. The descriptors are closed by the
	// wait when it returns, or by Close when no wait has begun (then none will poll).
	wakeR, wakeW int
	waiting      bool
	pipeClosed   bool
}

// NewTrigger returns a Trigger that watches nothing yet.
func NewTrigger() (*Trigger, error) {
	var p [2]int
	syscall.ForkLock.RLock() // no child inherits the pipe before it is close-on-exec
	err := unix.Pipe(p[:])
	if err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, err
	}
	for _, fd := range p {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return nil, err
		}
	}
	return &Trigger{wakeR: p[0], wakeW: p[1]}, nil
}

// Watch adds ln, a listening socket, to the watch; the caller keeps its own copy. Once
// the Trigger has fired or is closed, Watch does nothing.
func (t *Trigger) Watch(ln *os.File) error {
	rc, err := ln.SyscallConn() // Fd would switch the shared description to blocking
	if err != nil {
		return err
	}
	dup := -1
	if cerr := rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		unix.Close(dup)
		return nil
	}
	t.fds = append(t.fds, dup)
	t.wake()
	return nil
}

// Close ends the watch: a wait in progress returns false. It may be called more
// than once.
func (t *Trigger) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.waiting {
		t.wake() // the wait releases the descriptors when it returns
		return
	}
	t.release()
}

// wait blocks until a connection is pending on a watched socket (true) or the Trigger
// is closed (false). When the watch itself fails, it returns true: the proxy then
// starts at once, as if a connection were pending. Either way the watch is over, and
// the Trigger's descriptors are closed. It is called at most once.
func (t *Trigger) wait() bool {
	t.mu.Lock()
	t.waiting = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.done = true
		t.release()
		t.mu.Unlock()
	}()
	var buf [64]byte
	for {
		t.mu.Lock()
		if t.done {
			t.mu.Unlock()
			return false
		}
		pfds := make([]unix.PollFd, 0, 1+len(t.fds))
		pfds = append(pfds, unix.PollFd{Fd: int32(t.wakeR), Events: unix.POLLIN})
		for _, fd := range t.fds {
			pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		t.mu.Unlock()
		_, err := unix.Poll(pfds, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if t.isDone() {
			return false
		}
		fire := err != nil
		for _, p := range pfds[1:] {
			fire = fire || p.Revents != 0
		}
		if fire {
			return true
		}
		for {
			if n, err := unix.Read(t.wakeR, buf[:]); n <= 0 || err != nil {
				break
			}
		}
	}
}

func (t *Trigger) isDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// release closes the duplicates and the wake pipe, once nothing polls them; t.mu is
// held.
func (t *Trigger) release() {
	for _, fd := range t.fds {
		unix.Close(fd)
	}
	t.fds = nil
	if !t.pipeClosed {
		t.pipeClosed = true
		unix.Close(t.wakeR)
		unix.Close(t.wakeW)
	}
}

// wake interrupts a poll in progress; t.mu is held.
func (t *Trigger) wake() {
	if !t.pipeClosed {
		_, _ = unix.Write(t.wakeW, []byte{0})
	}
}
