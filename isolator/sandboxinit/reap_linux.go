package sandboxinit

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper reaps every child of the init (the init adopts orphans) when SIGCHLD says
// one changed state or the command's pidfd says it exited. No thread waits in wait4
// meanwhile: a thread blocked in a system call keeps the runtime's sysmon polling
// every 20 µs for the first 10 ms of the command (about 60 wake-ups, on the cores
// the command and bwrap need), where goroutines waiting on a channel or the network
// poller let it sleep.
type reaper struct{ chld chan os.Signal }

// newReaper subscribes to SIGCHLD. A child that exited before is collected by the
// first pass after it (collect); a SIGCHLD that arrives while the reaper is busy is
// never lost, as each wakeup reaps until no exited child is left.
func newReaper() *reaper {
	r := &reaper{chld: make(chan os.Signal, 1)}
	r.subscribe()
	return r
}

// subscribe subscribes r to SIGCHLD; until then only watch wakes it.
func (r *reaper) subscribe() { signal.Notify(r.chld, syscall.SIGCHLD) }

// reap reaps children until the process exits, and reports pid's exit status on
// exited, 128+N when a signal N killed it (ExitSetupFailed if pid was never seen).
func (r *reaper) reap(pid int, exited chan<- int) {
	go r.watch(pid)
	reported := false
	for {
		if code, ok := collect(pid); ok && !reported {
			reported = true
			exited <- code
		}
		<-r.chld
	}
}

// collect reaps every child that has exited and returns pid's status if it was one
// of them, 128+N when a signal N killed it, or ExitSetupFailed when no child is left
// (pid was reaped elsewhere: its status is lost); ok is false while pid runs. Call
// it again on each wakeup (r.chld).
func collect(pid int) (code int, ok bool) {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			if errors.Is(err, syscall.ECHILD) && !ok {
				return ExitSetupFailed, true
			}
			return code, ok
		}
		if wpid <= 0 {
			return code, ok
		}
		if wpid != pid {
			continue
		}
		ok = true
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ws.ExitStatus()
		}
	}
}

// watch wakes the reaper when pid exits, through a pidfd in the runtime's network
// poller: the thread that waits there for the init runs the reaper and the init's
// exit, where a SIGCHLD first wakes the runtime's signal thread and hands over
// from it. Without pidfds (Linux before 5.10) SIGCHLD alone wakes the reaper.
func (r *reaper) watch(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// WNOWAIT: the reaper collects the status; readable means pid has exited
		// (or is already reaped: ECHILD).
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
	select {
	case r.chld <- syscall.SIGCHLD:
	default: // a wakeup is pending already
	}
}
