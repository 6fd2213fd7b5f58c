package sandboxinit

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// reaper reaps every child of the init (the init adopts orphans) when SIGCHLD says
// one changed state. No thread waits in wait4 meanwhile: a thread blocked in a
// system call keeps the runtime's sysmon polling every 20 µs for as long as the
// command runs, where a goroutine waiting on a channel lets it sleep.
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
