package bwrap

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// groupGuard is a process in bwrap's process group that outlives devsandbox: a
// shell that reads its stdin, a pipe whose only writer is devsandbox, and at its
// end kills its own group (kill(0, SIGKILL)), itself included. devsandbox ends
// bwrap's group itself on every path it lives through (child.endGroup); the guard
// covers the one it does not: devsandbox killed by SIGKILL (or crashed) while
// bwrap sets up. bwrap then dies of its parent-death signal, but its child is in
// the group until its setsid, with no parent-death signal until just before its
// exec, and may wait for ever for the go-on its dead parent never gave it. The
// kernel closes devsandbox's descriptors as it dies, the shell reads end-of-file
// and kills what is left of the group. It names no process by number: the group
// is its own, whose id it holds while it lives.
//
// It starts just after bwrap: devsandbox killed in between (one fork and exec)
// leaves the group unguarded. A child past its setsid is out of the group and not
// covered: by then bwrap let it go on, and it is the sandbox's init to be, which
// ends at the end of its readiness socket (devsandbox's end closed by the kernel).
type groupGuard struct {
	pid int
	w   *os.File // devsandbox's end of the guard's stdin
}

// guardShell runs the guard; guardScript is its program.
const (
	guardShell  = "/bin/sh"
	guardScript = "read _; kill -KILL 0"
)

// startGuard starts a guard in the process group pgid.
func startGuard(pgid int) (*groupGuard, error) {
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
	pid, _, err := syscall.StartProcess(guardShell, []string{"devsandbox-guard", "-c", guardScript}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []uintptr{r.Fd(), null.Fd(), null.Fd()},
		// No parent-death signal: it is to outlive devsandbox.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pgid: pgid},
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting %s as the guard of bwrap's process group: %w", guardShell, err)
	}
	return &groupGuard{pid: pid, w: w}, nil
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
