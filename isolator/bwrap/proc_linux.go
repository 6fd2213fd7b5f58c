package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/lastingthread"
)

// child is bwrap as Run starts and reaps it. It is started with syscall.StartProcess
// and a pidfd from its clone, not with os/exec: os/exec first forks a throwaway child
// to probe the kernel's pidfd support, a process creation on every launch's critical
// path. Its exit is awaited in the runtime's netpoller on the pidfd, so no thread
// blocks in waitid for the life of the sandbox: a goroutine blocked in a system call
// keeps the runtime's sysmon thread polling every 20 µs, and its wake-up after bwrap
// exits needs a new thread. Without a pollable pidfd (kernels before 5.3) the wait
// blocks in wait4 as os/exec's does.
type child struct {
	pid   int
	pidfd *os.File // nil: wait blocks in wait4
	// copies yields one value per copy of a non-file stdout/stderr writer, when the
	// copy ends (at EOF, once every holder of the pipe's write end closed it).
	copies  chan error
	ncopies int
	// group: the child is in a process group of its own (Setpgid), pgid, which
	// its exit ends (endGroup); the group's leader is its guard (groupGuard),
	// started first. killed: kill sent it SIGKILL.
	group  bool
	pgid   int
	killed atomic.Bool
	guard  *groupGuard
}

// childStdio are the command's descriptors 0-2 for stdio: files pass as they are, a
// nil stream reads or writes /dev/null, and any other writer is fed from a pipe by a
// goroutine, as os/exec does. closeAfter are the descriptors to close in devsandbox
// once the child holds them.
type childStdio struct {
	files      [3]*os.File
	closeAfter []*os.File
	copies     chan error
	ncopies    int
}

func newChildStdio(in *os.File, out, errw io.Writer) (*childStdio, error) {
	s := &childStdio{copies: make(chan error, 2)}
	if in == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		in = f
		s.closeAfter = append(s.closeAfter, f)
	}
	s.files[0] = in
	for i, w := range []io.Writer{out, errw} {
		if i == 1 && errw == out && s.files[1] != nil {
			s.files[2] = s.files[1] // one pipe for both, so their order holds
			break
		}
		f, err := s.writer(w)
		if err != nil {
			s.close()
			return nil, err
		}
		s.files[1+i] = f
	}
	return s, nil
}

func (s *childStdio) writer(w io.Writer) (*os.File, error) {
	switch w := w.(type) {
	case *os.File:
		return w, nil
	case nil:
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		s.closeAfter = append(s.closeAfter, f)
		return f, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.closeAfter = append(s.closeAfter, pw)
	s.ncopies++
	go func() {
		_, err := io.Copy(w, r)
		r.Close()
		s.copies <- err
	}()
	return pw, nil
}

// close releases devsandbox's copies of the child's ends.
func (s *childStdio) close() {
	for _, f := range s.closeAfter {
		f.Close()
	}
	s.closeAfter = nil
}

// killPoint, set by tests only, is called at the named points of startChild: a test
// kills the process there (SIGKILL), as a kill -9 of devsandbox would.
var killPoint func(at string)

// startChild starts path with argv and env; its descriptors are stdio's three, then
// extra (a nil entry is a closed descriptor). attr must not set PidFD. A child
// asked to lead a process group of its own (Setpgid, Pgid 0) joins instead the
// group of a guard started just before it (startGuard), which leads it: the group
// is guarded from the child's first instruction on.
func startChild(path string, argv, env []string, stdio *childStdio, extra []*os.File, attr *syscall.SysProcAttr) (*child, error) {
	return startGuarded(path, argv, env, stdio, extra, attr, nil)
}

// startGuarded is startChild with the guard begun earlier (beginGuard; nil: one is
// started now), which it takes whatever happens (an unused guard is ended).
func startGuarded(path string, argv, env []string, stdio *childStdio, extra []*os.File, attr *syscall.SysProcAttr, pending *guardStart) (*child, error) {
	sys := *attr
	var guard *groupGuard
	if !attr.Setpgid || attr.Pgid != 0 {
		pending.drop()
	} else {
		var err error
		if guard, err = pending.take(); err != nil {
			stdio.close()
			for i := 0; i < stdio.ncopies; i++ {
				<-stdio.copies
			}
			return nil, err
		}
		sys.Pgid = guard.pid
		if killPoint != nil {
			killPoint("guard started")
		}
	}
	fds := make([]uintptr, 0, 3+len(extra))
	for _, f := range append(stdio.files[:], extra...) {
		if f == nil {
			fds = append(fds, ^uintptr(0))
			continue
		}
		fds = append(fds, f.Fd())
	}
	pidfd := -1
	sys.PidFD = &pidfd
	var pid int
	var err error
	fork := func() {
		pid, _, err = syscall.StartProcess(path, argv, &syscall.ProcAttr{Env: env, Files: fds, Sys: &sys})
	}
	if sys.Pdeathsig != 0 {
		// The kernel sends it when the thread that forks the child ends, and a
		// goroutine of the program (an embedder's) may end this one once it is ours no
		// more: forked from a thread that lives as long as the process.
		lastingthread.Run(fork)
	} else {
		fork()
	}
	runtime.KeepAlive(stdio)
	runtime.KeepAlive(extra)
	if err == nil && killPoint != nil {
		killPoint("child started")
	}
	stdio.close()
	if err != nil {
		guard.end() // alone in its group: it kills itself at its stdin's end
		for i := 0; i < stdio.ncopies; i++ {
			<-stdio.copies
		}
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	c := &child{pid: pid, copies: stdio.copies, ncopies: stdio.ncopies, guard: guard}
	if guard != nil {
		c.group, c.pgid = true, guard.pid
	}
	if pidfd >= 0 {
		// Non-blocking, so os.NewFile registers it with the netpoller.
		if unix.SetNonblock(pidfd, true) == nil {
			c.pidfd = os.NewFile(uintptr(pidfd), "bwrap pidfd")
		} else {
			unix.Close(pidfd)
		}
	}
	return c, nil
}

// kill sends sig to the child, through its pidfd when it has one (the pid of a child
// reaped meanwhile is not signalled: the pidfd is closed then, or names the dead
// child); without a pidfd, by pid, while wait has not returned.
func (c *child) kill(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		c.killed.Store(true)
	}
	if c.pidfd != nil {
		if rc, err := c.pidfd.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.PidfdSendSignal(int(fd), sig, nil, 0) })
		}
		return
	}
	_ = syscall.Kill(c.pid, sig)
}

// wait reaps the child and returns its status once its stdio copies ended. When the
// child is in a process group of its own (its guard's), what is left of the group
// when it exits is killed first (endGroup).
func (c *child) wait() (syscall.WaitStatus, error) {
	ws, err := c.reap()
	for i := 0; i < c.ncopies; i++ {
		if cerr := <-c.copies; err == nil && cerr != nil {
			err = cerr
		}
	}
	return ws, err
}

// reap waits for the child's exit, ends its group (endGroup) while the exited child
// is not reaped yet, then reaps it. A group left running is reap's error, beside
// the status.
func (c *child) reap() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	wait4 := func() error {
		for {
			_, err := syscall.Wait4(c.pid, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return os.NewSyscallError("wait4", err)
			}
			return nil
		}
	}
	// exited waits (with unix.WNOHANG: looks) for the child's exit and leaves it
	// unreaped: its pid, and so its group's id, stays its own meanwhile.
	exited := func(opts int) (bool, int32, error) {
		for {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PID, c.pid, &info, unix.WEXITED|unix.WNOWAIT|opts, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				return true, 0, os.NewSyscallError("waitid", err)
			}
			return info.Signo != 0, info.Code, nil
		}
	}
	defer c.guard.end() // once the group was ended, or, failing that, by the guard
	var done bool
	var code int32
	var werr error
	if c.pidfd != nil {
		defer c.pidfd.Close()
		if rc, err := c.pidfd.SyscallConn(); err == nil {
			// The pidfd turns readable when the child exits; until then, the look
			// finds nothing and the goroutine parks in the netpoller.
			_ = rc.Read(func(uintptr) bool {
				done, code, werr = exited(unix.WNOHANG)
				return done
			})
		}
	}
	if !done {
		_, code, werr = exited(0)
	}
	var gerr error
	if werr == nil {
		gerr = c.endGroup(code)
	}
	if err := wait4(); err != nil {
		return ws, err
	}
	return ws, gerr
}

// endGroup kills what is left of the exited child's process group (SIGKILL; the
// group is its guard's, which leads it and is not reaped yet) and, when the
// child did not exit by itself (code is not CLD_EXITED) or kill killed it, waits
// until every process found in the group has exited (waitGroup).
//
// The child is bwrap. Its own child (the sandbox's pid 1 to be) stays in bwrap's
// group from its clone until its setsid (--new-session), and sets its parent-death
// signal only after that, just before it execs: bwrap killed before it let the child
// go on (the uid and gid maps written) leaves the child waiting on an eventfd it
// holds itself, for ever. Killed in its setup, it finds no parent to hand it on.
// A child past its setsid execs the init, which waits for Run's go-ahead and ends
// at the readiness socket's end (wire.AwaitGoArg); one past its exec has the
// parent-death signal and is the pid namespace's pid 1, which takes the sandbox with
// it. A group of nothing but the guard and the exited child costs one kill(2).
func (c *child) endGroup(code int32) error {
	if !c.group {
		return nil
	}
	_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
	if code == cldExited && !c.killed.Load() {
		return nil
	}
	if err := waitGroup(c.pgid, c.pid); err != nil {
		return fmt.Errorf("%w: %w", errGroupLeft, err)
	}
	return nil
}

// runTrial runs a trial of bwrap (doctor's and Check's) at path with argv and this
// process's environment, as Run starts and ends bwrap: in a process group of its
// own, SIGKILLed should devsandbox die, and reaped by child.wait, which kills what
// is left of the group and, when the end of ctx killed bwrap, waits until the
// group's processes have exited. Killing bwrap alone would leave its child, in its
// setup and bwrap's group, waiting for ever for the go-on bwrap did not give it.
// Its output, stdout and stderr in one, goes to out (nil: none). err is nil for an
// exit with status 0 and a group that ended; else it says how the trial ended,
// joined with errGroupLeft when a process of the group outlived its kill.
func runTrial(ctx context.Context, path string, argv []string, out io.Writer) error {
	stdio, err := newChildStdio(nil, out, out)
	if err != nil {
		return err
	}
	c, err := startChild(path, argv, os.Environ(), stdio, nil, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL})
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.kill(syscall.SIGKILL) })
	ws, werr := c.wait()
	stop()
	var end error
	switch {
	case c.killed.Load():
		end = fmt.Errorf("%s did not end in time: %w", path, context.Cause(ctx))
	case ws.Signaled():
		end = fmt.Errorf("%s was killed by %v", path, ws.Signal())
	case ws.ExitStatus() != 0:
		end = fmt.Errorf("%s exited with status %d", path, ws.ExitStatus())
	}
	return errors.Join(end, werr)
}

// errGroupLeft is reap's error when a process of bwrap's group outlived its kill.
var errGroupLeft = errors.New("a process bwrap started is still running after it was killed")

// cldExited is siginfo's si_code for a child that exited by itself (CLD_EXITED).
const cldExited = 1

// waitGroup waits, once bwrap's group pgid is killed, until every process of it but
// its leader (the guard) and bwrap (pid) has exited: bwrap's child, the sandbox's
// pid 1, which is not devsandbox's child (whoever it is reparented to reaps it), so
// it is waited for through a pidfd. The guard, the group's leader, is not reaped
// yet: the group's id cannot be another's, so a process found in it is a member,
// not a reuse of a number; and bwrap, exited, clones no more.
func waitGroup(pgid, pid int) error {
	deadline := time.Now().Add(abandonWait)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("listing bwrap's processes: %w", err)
	}
	for _, d := range ents {
		member, err := strconv.Atoi(d.Name())
		if err != nil || member == pgid || member == pid || !inGroup(member, pgid) {
			continue
		}
		pidfd, err := unix.PidfdOpen(member, 0)
		if err != nil {
			continue // gone, and reaped
		}
		if inGroup(member, pgid) { // still the member, not a number reused since
			err = waitExit(pidfd, deadline)
		}
		unix.Close(pidfd)
		if err != nil {
			return fmt.Errorf("bwrap's process %d: %w", member, err)
		}
	}
	return nil
}

// inGroup reports whether the process pid is in the process group pgid.
func inGroup(pid, pgid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && procGroup(stat) == pgid
}

// waitExit waits until the process of pidfd has exited (a zombie holds no mount,
// namespace or descriptor), at most until deadline.
func waitExit(pidfd int, deadline time.Time) error {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return fmt.Errorf("still running %v after it was killed", abandonWait)
		}
		n, err := unix.Poll(fds, ms)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return err
		case n > 0:
			return nil
		}
	}
}

// procGroup returns the process group of a /proc/PID/stat line (0 if malformed).
func procGroup(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:])) // state ppid pgrp ...
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(f[2])
	return n
}

// abandonWait bounds abandon's wait for bwrap's child, which its new parent reaps.
const abandonWait = 5 * time.Second
