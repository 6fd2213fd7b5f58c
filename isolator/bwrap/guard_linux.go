package bwrap

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// groupGuard leads the process group bwrap joins as it starts, and outlives
// devsandbox: a shell that reads its stdin, a pipe whose only writer is
// devsandbox, and at its end kills its own group (kill(0, SIGKILL)), itself
// included. devsandbox ends bwrap's group itself on every path it lives through
// (child.endGroup); the guard covers the one it does not: devsandbox killed by
// SIGKILL (or crashed) while bwrap sets up. bwrap then dies of its parent-death
// signal, but its child is in the group until its setsid, with no parent-death
// signal until just before its exec, and waits for ever in its read of the
// eventfd its dead parent never wrote (bubblewrap's child_wait_fd: an eventfd
// has no end of file, and the child holds it itself). The kernel closes
// devsandbox's descriptors as it dies, the shell reads end-of-file and kills
// what is left of the group. It names no process by number: the group is its
// own, whose id it holds while it lives, and devsandbox does not reap it until
// the group was ended (the group's id is not another's meanwhile).
//
// It starts before bwrap, which joins its group (startChild): devsandbox killed
// at any point after the guard's start finds the group guarded, killed before
// it leaves the guard alone in its group, which it ends at once. A child past
// its setsid is out of the group and not covered: by then bwrap let it go on,
// and it is the sandbox's init to be, which ends at the end of its readiness
// socket (devsandbox's end closed by the kernel), unless the go-ahead is in the
// socket already (docs/security-model.md says when the command may then run).
type groupGuard struct {
	pid int
	w   *os.File // devsandbox's end of the guard's stdin
}

// guardShell runs the guard, named guardName (its argv[0]); guardScript is its
// program.
const (
	guardShell  = "/bin/sh"
	guardName   = "devsandbox-guard"
	guardScript = "read _; kill -KILL 0"
)

// startGuard starts a guard leading a process group of its own.
func startGuard() (*groupGuard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		w.Close()
		return nil, err
	}
	defer null.Close()
	pid, _, err := syscall.StartProcess(guardShell, []string{guardName, "-c", guardScript}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []uintptr{r.Fd(), null.Fd(), null.Fd()},
		// No parent-death signal: it is to outlive devsandbox.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting %s as the guard of bwrap's process group: %w", guardShell, err)
	}
	return &groupGuard{pid: pid, w: w}, nil
}

// guardStart is a guard being started on a goroutine of its own (beginGuard), so that
// its fork and its exec of the shell, which the caller would otherwise wait for, run
// beside the caller's own work until the child that joins its group starts (take).
type guardStart struct {
	done  chan struct{}
	guard *groupGuard
	err   error
	taken bool
}

// beginGuard starts a guard beside the caller.
func beginGuard() *guardStart {
	s := &guardStart{done: make(chan struct{})}
	go func() {
		s.guard, s.err = startGuard()
		close(s.done)
	}()
	return s
}

// take waits for the guard's start and hands the guard over: from now on its end is
// the taker's. A nil guardStart starts one now.
func (s *guardStart) take() (*groupGuard, error) {
	if s == nil {
		return startGuard()
	}
	<-s.done
	s.taken = true
	return s.guard, s.err
}

// drop ends a guard no child joined: alone in its group, it kills itself at its
// stdin's end and is reaped here. It does nothing once the guard was taken.
func (s *guardStart) drop() {
	if s == nil || s.taken {
		return
	}
	<-s.done
	s.taken = true
	s.guard.end()
}

// end closes the guard's stdin, so that it kills its group if it still lives
// (child.endGroup killed the group first, the guard with it, on every path it
// runs), and reaps it.
func (g *groupGuard) end() {
	if g == nil {
		return
	}
	g.w.Close()
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(g.pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}
