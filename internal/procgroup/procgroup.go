// Package procgroup ends a program started with os/exec together with the processes
// it started: the program leads a process group of its own, and the end of its
// context kills that whole group, not the program alone.
//
// It is for host programs that start children which need no parent to go on (a
// shell's commands, podman's re-exec in its user namespace): killed alone, such a
// program leaves them running. A child that leaves the group (setsid, setpgid) is
// not reached, nor is one left after the program exited by itself: once the
// program is reaped its group id may be reused, so nothing is killed then.
package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Own makes cmd, not started yet, the leader of a process group of its own
// (keyboard signals to the caller's group no longer reach it) and has the end of
// its context SIGKILL the group. delay, when cmd has none, is its WaitDelay: the
// bound on the wait for its output once the group was killed.
func Own(cmd *exec.Cmd, delay time.Duration) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.Cancel = func() error { return Kill(cmd.Process) }
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = delay
	}
}

// Kill SIGKILLs the process group p leads, or p alone when it leads none (its
// caller replaced the SysProcAttr Own set). A p already reaped is not signalled
// (os.ErrProcessDone): its pid, and so the group's id, may be another's by then.
func Kill(p *os.Process) error {
	if err := p.Signal(syscall.Signal(0)); err != nil {
		return err
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return p.Kill()
	} else if err != nil {
		return err
	}
	return nil
}
