package handoff

import (
	"sync"
	"syscall"
)

// The control bytes of job control (see the package doc): signal numbers that are
// never forwarded to the command (isolator.ForwardedSignals holds neither).
const (
	// JobStop: devsandbox is being stopped (Ctrl-Z, a read of the terminal from the
	// background). The program freezes the command (Freezer) and stops itself; the
	// caller stops itself once it sees the program stopped.
	JobStop = Signal(syscall.SIGTSTP)
	// JobGo: devsandbox goes on in the foreground, or without the terminal on the
	// command's stdin: the program thaws the command.
	JobGo = Signal(syscall.SIGCONT)
)

// Freezer is how a program's run freezes and thaws its command when devsandbox is
// stopped and continued by a shell's job control. The run sets its freeze function
// once the command's container is known, and ends it (End) when the run returns;
// until one is set, a stop stops the program alone (nothing runs the command yet),
// and once the run ended a stop is not one (the command is over). Its methods may be
// called on a nil Freezer (a run served without one).
type Freezer struct {
	mu     sync.Mutex
	freeze func(stop bool) (ended bool)
	frozen bool
	over   bool
}

// Set sets the freeze function (nil: none). freeze(true) freezes the command, or
// returns true when the command had ended by then (nothing is frozen: the run goes
// on to its end); freeze(false) thaws it. Each is called with the lock held, never
// twice in a row with the same argument.
func (f *Freezer) Set(freeze func(stop bool) (ended bool)) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.freeze, f.frozen, f.over = freeze, false, false
}

// End ends the freeze function when the run returns: the command is over, so a stop
// from then on (Ctrl-Z as the program removes the container and exits) finds it
// ended, as freeze(true) would: the program does not stop, and goes on to its exit.
// Stopped, it would hold the run's end (the container's removal) and devsandbox,
// seeing it stopped, would stop too: the shell would show a job stopped whose
// command is over, until `fg`.
func (f *Freezer) End() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.freeze, f.frozen, f.over = nil, false, true
}

// stop freezes the command, then stops this process (SIGSTOP: it returns once the
// process is continued). The command stays frozen until thaw. When the command had
// ended by the freeze, this process does not stop: its run goes on to its end, and
// the caller, which waits to see it stopped, sees it exit instead and does not stop
// either (the shell would show a job stopped whose command is over).
func (f *Freezer) stop() {
	if f != nil {
		f.mu.Lock()
		ended := f.over
		if f.freeze != nil && !f.frozen {
			ended = f.freeze(true)
			f.frozen = !ended
		}
		f.mu.Unlock()
		if ended {
			return
		}
	}
	_ = syscall.Kill(syscall.Getpid(), syscall.SIGSTOP)
}

// thaw thaws the command if it is frozen.
func (f *Freezer) thaw() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.freeze != nil && f.frozen {
		f.freeze(false)
		f.frozen = false
	}
}
