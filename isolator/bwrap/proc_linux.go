package bwrap

import (
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
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

// startChild starts path with argv and env; its descriptors are stdio's three, then
// extra (a nil entry is a closed descriptor). attr must not set PidFD.
func startChild(path string, argv, env []string, stdio *childStdio, extra []*os.File, attr *syscall.SysProcAttr) (*child, error) {
	fds := make([]uintptr, 0, 3+len(extra))
	for _, f := range append(stdio.files[:], extra...) {
		if f == nil {
			fds = append(fds, ^uintptr(0))
			continue
		}
		fds = append(fds, f.Fd())
	}
	pidfd := -1
	sys := *attr
	sys.PidFD = &pidfd
	pid, _, err := syscall.StartProcess(path, argv, &syscall.ProcAttr{Env: env, Files: fds, Sys: &sys})
	runtime.KeepAlive(stdio)
	runtime.KeepAlive(extra)
	stdio.close()
	if err != nil {
		for i := 0; i < stdio.ncopies; i++ {
			<-stdio.copies
		}
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	c := &child{pid: pid, copies: stdio.copies, ncopies: stdio.ncopies}
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
	if c.pidfd != nil {
		if rc, err := c.pidfd.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.PidfdSendSignal(int(fd), sig, nil, 0) })
		}
		return
	}
	_ = syscall.Kill(c.pid, sig)
}

// wait reaps the child and returns its status once its stdio copies ended.
func (c *child) wait() (syscall.WaitStatus, error) {
	ws, err := c.reap()
	for i := 0; i < c.ncopies; i++ {
		if cerr := <-c.copies; err == nil && cerr != nil {
			err = cerr
		}
	}
	return ws, err
}

func (c *child) reap() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	wait4 := func(opts int) (bool, error) {
		for {
			pid, err := syscall.Wait4(c.pid, &ws, opts, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				return true, os.NewSyscallError("wait4", err)
			}
			return pid == c.pid, nil
		}
	}
	if c.pidfd == nil {
		_, err := wait4(0)
		return ws, err
	}
	defer c.pidfd.Close()
	rc, err := c.pidfd.SyscallConn()
	if err != nil {
		_, err := wait4(0)
		return ws, err
	}
	var werr error
	// The pidfd turns readable when the child exits; until then, wait4 with WNOHANG
	// finds nothing and the goroutine parks in the netpoller.
	if err := rc.Read(func(uintptr) bool {
		var done bool
		done, werr = wait4(syscall.WNOHANG)
		return done
	}); err != nil {
		_, err := wait4(0)
		return ws, err
	}
	return ws, werr
}
