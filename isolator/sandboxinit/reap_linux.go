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

// newReaper subscribes to SIGCHLD. It must be called before the first child is
// started; a SIGCHLD that arrives while the reaper is busy is never lost, as each
// wakeup reaps until no exited child is left.
func newReaper() *reaper {
	r := &reaper{chld: make(chan os.Signal, 1)}
	signal.Notify(r.chld, syscall.SIGCHLD)
	return r
}

// reap reaps children until the process exits, and reports pid's exit status on
// exited, 128+N when a signal N killed it (ExitSetupFailed if pid was never seen).
func (r *reaper) reap(pid int, exited chan<- int) {
	go r.watch(pid)
	reported := false
	report := func(code int) {
		if !reported {
			reported = true
			exited <- code
		}
	}
	for {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				if errors.Is(err, syscall.ECHILD) {
					report(ExitSetupFailed) // pid was reaped elsewhere: its status is lost
				}
				break
			}
			if wpid <= 0 {
				break
			}
			if wpid != pid {
				continue
			}
			if ws.Signaled() {
				report(128 + int(ws.Signal()))
			} else {
				report(ws.ExitStatus())
			}
		}
		<-r.chld
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
