package isolator

import (
	"os"
	"os/signal"
	"syscall"
)

// Signals is a subscription to ForwardedSignals that a caller makes ahead of a run and
// hands to a backend (bwrap.Isolator.Signals). A process's first signal.Notify starts
// the runtime's signal threads and then waits for each signal's mask update, a round
// trip between two threads per signal (0.1-0.9 ms in a fresh process here); made while
// the Plan is built, it is done on the other core by the time the backend starts. From
// CatchSignals on, the signals are caught: one that arrives before the run starts
// waits in C, as one that arrives before the command runs does. The maker calls Stop
// when the process goes on after the run (the signals then take their default action
// again); a process that exits right after it need not.
//
// Job receives the job-control signals (SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT), caught
// from CatchSignals on too: a backend that takes them stops and continues the
// sandbox with the process (bwrap), and stops the process itself.
type Signals struct {
	C     chan os.Signal
	Job   chan os.Signal
	ready chan struct{}
}

// JobSignals are the job-control signals Signals.Job receives.
var JobSignals = []os.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGCONT}

// CatchSignals subscribes to ForwardedSignals in a goroutine and returns at once.
func CatchSignals() *Signals {
	s := &Signals{C: make(chan os.Signal, 8), Job: make(chan os.Signal, 8), ready: make(chan struct{})}
	go func() {
		signal.Notify(s.C, ForwardedSignals...)
		signal.Notify(s.Job, JobSignals...)
		close(s.ready)
	}()
	return s
}

// Wait returns once the subscription is in effect: a signal sent after it returns is
// in C, not lost and not fatal.
func (s *Signals) Wait() { <-s.ready }

// Stop ends the subscription once it is in effect.
func (s *Signals) Stop() {
	<-s.ready
	signal.Stop(s.C)
	signal.Stop(s.Job)
}
