package service

import (
	"errors"
	"os"
	"sync"

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
// The duplicates wait in the runtime's network poller: no thread blocks while the
// sandbox starts and runs (a thread blocked in a system call keeps the runtime's
// monitor polling, and makes it start another thread). Its methods may be called
// from any goroutine.
type Trigger struct {
	mu     sync.Mutex
	files  []*os.File // duplicates of the watched listeners
	done   bool       // fired or closed: nothing more is watched
	fired  chan struct{}
	closed chan struct{}
}

// NewTrigger returns a Trigger that watches nothing yet.
func NewTrigger() (*Trigger, error) {
	return &Trigger{fired: make(chan struct{}), closed: make(chan struct{})}, nil
}

// Watch adds ln, a listening socket, to the watch; the caller keeps its own copy. Once
// the Trigger has fired or is closed, Watch does nothing. The socket is made
// non-blocking (a property it shares with every copy; whoever serves it, the proxy
// included, uses it so).
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
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return err
	}
	f := os.NewFile(uintptr(dup), "watched listener") // non-blocking: in the poller
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		f.Close()
		return nil
	}
	t.files = append(t.files, f)
	go t.watch(f)
	return nil
}

// watch fires the Trigger once a connection is pending on f. When the watch itself
// fails it fires too: the proxy then starts at once, as if a connection were pending.
// Closing f (the Trigger is over) ends it.
func (t *Trigger) watch(f *os.File) {
	rc, err := f.SyscallConn()
	if err == nil {
		err = rc.Read(func(fd uintptr) bool { return pending(int(fd)) })
	}
	if errors.Is(err, os.ErrClosed) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	close(t.fired)
	t.over()
}

// pending reports whether fd, a listening socket, has a connection waiting (or an
// error: then the proxy starts and reports it); it does not block.
func pending(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || (n > 0 && p[0].Revents != 0)
	}
}

// Close ends the watch: a wait in progress returns false. It may be called more
// than once.
func (t *Trigger) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.closed:
	default:
		close(t.closed)
	}
	if !t.done {
		t.over()
	}
}

// over ends the watch and closes the duplicates; t.mu is held.
func (t *Trigger) over() {
	t.done = true
	for _, f := range t.files {
		f.Close()
	}
	t.files = nil
}

// wait blocks until a connection is pending on a watched socket (true) or the Trigger
// is closed (false). Either way the watch is over, and the Trigger's descriptors are
// closed. It is called at most once.
func (t *Trigger) wait() bool {
	select {
	case <-t.fired:
		return true
	case <-t.closed:
		return false
	}
}
