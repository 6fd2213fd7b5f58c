//go:build linux

package companion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/accept"
	"github.com/devsandbox/devsandbox/internal/fdpass"
	"github.com/devsandbox/devsandbox/internal/procs"
)

// holdSocket is the kept companion's holder's abstract Unix socket: it lives in the
// companion's own network namespace, on no file system a process could replace it in.
const holdSocket = "@devsandbox-companion-hold"

// heldGrace is how long after the host closed a session's stream (the end of the
// session's stdin) the holder lets its proxy end on its own (it gives requests in
// flight two seconds) before it kills it.
const heldGrace = 3 * time.Second

// Hold is the main process of a kept container's companion (HoldArg), its pid 1: it
// serves nothing itself and keeps the companion free of processes that outlived their
// session, until ctx is done.
//
// A process of the companion is a session's when it descends from an exec'd process
// (parent pid 0: the engine started it, nothing inside could): each session's proxy is
// one (ServeHeld). Each registers on holdSocket before it reads its request (the
// session's secrets), handing the holder its end of the host's stream; at each
// registration, and when a session's proxy has exited, the holder kills every
// process that descends from no exec'd process: what an ended session's proxy left,
// whatever its state. A proxy that does not end when the host has closed its stream
// (one a process that got into it stopped, or that ignores its end) is killed
// heldGrace later. The holder is not dumpable, so no process of the companion (the
// same user) can trace it; a signal it handles (SIGTERM) ends the companion, and
// everything in it.
func Hold(ctx context.Context, stderr io.Writer) int {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "devsandbox-proxy companion hold: making the process not dumpable: %v\n", err)
		return 2
	}
	ln, err := net.Listen("unix", holdSocket)
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-proxy companion hold: listening for sessions: %v\n", err)
		return 2
	}
	defer ln.Close()
	h := &holder{self: os.Getpid()}
	go accept.Loop(ln, func(c net.Conn) bool {
		go h.session(c.(*net.UnixConn))
		return true
	})
	go procs.ReapOrphans()
	<-ctx.Done()
	return 0
}

// holder is Hold's state: its pid, and the lock that serialises its sweeps.
type holder struct {
	self int
	mu   sync.Mutex
}

// sweep kills every process that descends from no exec'd process (but the holder),
// until none is left or a few seconds passed. Killed orphans are reaped by Hold.
func (h *holder) sweep() {
	h.mu.Lock()
	defer h.mu.Unlock()
	procs.KillStrays(h.self, 5*time.Second)
}

// session serves one registration: it sweeps, lets the session's proxy go on ('k'),
// then waits until the proxy has exited (killing it heldGrace after its host's stream
// hung up) and sweeps again.
func (h *holder) session(c *net.UnixConn) {
	defer c.Close()
	pid, pidfd, ok := procs.EnginePeer(c)
	if !ok {
		return // not a process the engine started: not a session's proxy
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	} // else before Linux 5.3: its connection's end stands for its exit
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return
	}
	stream := fdpass.First(oob[:oobn])
	if stream >= 0 {
		defer unix.Close(stream)
	}
	h.sweep()
	if _, err := c.Write([]byte{'k'}); err != nil {
		return
	}
	h.await(c, pid, pidfd, stream)
	h.sweep()
}

// await returns once the session's proxy pid has exited: its pidfd is readable (or,
// without one, its connection c ended). Once the host's stream hangs up, the proxy
// has heldGrace to exit before it is killed.
func (h *holder) await(c *net.UnixConn, pid, pidfd, stream int) {
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		if pidfd < 0 {
			_ = c.SetReadDeadline(time.Time{})
			_, _ = io.Copy(io.Discard, c)
			return
		}
		waitReadable(pidfd, -1)
	}()
	hup := make(chan struct{})
	if stream >= 0 {
		go func() {
			// Events 0: only POLLHUP and POLLERR wake it (the proxy reads the data).
			if waitHangUp(stream, exited) {
				close(hup)
			}
		}()
	}
	select {
	case <-exited:
		return
	case <-hup:
	}
	select {
	case <-exited:
		return
	case <-time.After(heldGrace):
	}
	if pidfd >= 0 {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	} else {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
}

// waitReadable waits until fd is readable (limit -1: no limit).
func waitReadable(fd, limit int) {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, limit)
		if n == 1 || (err != nil && !errors.Is(err, unix.EINTR)) || (n == 0 && limit >= 0) {
			return
		}
	}
}

// waitHangUp reports whether stream hung up (POLLHUP, POLLERR) before done was closed.
func waitHangUp(stream int, done <-chan struct{}) bool {
	for {
		fds := []unix.PollFd{{Fd: int32(stream), Events: 0}}
		n, err := unix.Poll(fds, 500)
		if n == 1 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
			return true
		}
		if n == 1 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return false // POLLNVAL, or poll cannot watch it: nothing to act on
		}
		select {
		case <-done:
			return false
		default:
		}
	}
}

// holdLimit bounds how long a session's proxy waits for the holder's answer.
const holdLimit = 10 * time.Second

// holderRefused, when set (tests), is called after each refused dial of dialHolder.
var holderRefused func()

// dialHolder connects to the holder's socket addr, within limit. The holder is the
// companion's pid 1 and listens a moment after the engine started it: a session
// exec'd into a companion just started may come first, and finds nothing listening
// (ECONNREFUSED); it tries again until limit. Who answers is register's to check.
func dialHolder(addr string, limit time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(limit)
	wait := time.Millisecond
	for {
		c, err := net.DialTimeout("unix", addr, time.Until(deadline))
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !time.Now().Add(wait).Before(deadline) {
			return c, err
		}
		if holderRefused != nil {
			holderRefused()
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// register registers this process (a session's proxy exec'd into the kept companion)
// with the companion's holder on addr, handing it stream (its stdin: the host's), and
// waits until the holder's sweep is done: nothing an ended session left runs once it
// returns. The connection stays open for the process's life.
func register(addr string, stream *os.File) (net.Conn, error) {
	c, err := dialHolder(addr, holdLimit)
	if err != nil {
		return nil, fmt.Errorf("the kept companion's holder does not answer (%v); remove the companion (docker rm -f devsandbox-<project>-px) and run again", err)
	}
	// Only the holder, the companion's pid 1, may let a session go on.
	if pid, err := procs.PeerPid(c.(*net.UnixConn)); err != nil || pid != 1 {
		c.Close()
		return nil, fmt.Errorf("something other than the kept companion's holder answers on its socket (pid %d, %v)", pid, err)
	}
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte{'r'}, unix.UnixRights(int(stream.Fd())), nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("registering with the kept companion's holder: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(holdLimit))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'k' {
		c.Close()
		return nil, fmt.Errorf("the kept companion's holder did not let the session go on (%v)", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}
