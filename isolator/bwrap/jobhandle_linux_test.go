package bwrap

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// handleLog runs handle on sigs with its effects recorded: the stop of the sandbox
// (stopErr is its result), devsandbox's own stops, the kill and the warnings.
func handleLog(t *testing.T, background bool, stopErr error, sigs ...syscall.Signal) (string, *jobControl) {
	t.Helper()
	var log strings.Builder
	j := &jobControl{stdinTerm: true,
		stopAll:    func() error { log.WriteString("stop-sandbox "); return stopErr },
		self:       func(s syscall.Signal) { fmt.Fprintf(&log, "stop-self(%d) ", s) },
		background: func() bool { return background },
	}
	for _, s := range sigs {
		j.handle(s, func(f string, a ...any) { log.WriteString("warn ") }, func() { log.WriteString("kill ") },
			func() (os.Signal, bool) { return nil, false }, func(os.Signal) {})
	}
	return log.String(), j
}

// SIGTTIN and SIGTTOU stop the run only while devsandbox is in the background: in
// the foreground they are late copies of a stop already acted on, and stopping
// then would leave the user's foreground job stopped by a signal the shell did not
// send (the terminal would read as hung).
func TestHandleTerminalStopsOnlyInBackground(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTTIN, syscall.SIGTTOU} {
		if got, _ := handleLog(t, false, nil, sig); got != "" {
			t.Errorf("signal %d in the foreground: %q, want nothing done", sig, got)
		}
		want := fmt.Sprintf("stop-sandbox stop-self(%d) ", sig)
		if got, _ := handleLog(t, true, nil, sig); got != want {
			t.Errorf("signal %d in the background: %q, want %q", sig, got, want)
		}
	}
}

// A sandbox that cannot be stopped is killed, and devsandbox does not stop: the
// shell never shows a job stopped whose command runs on and reads the terminal.
func TestHandleKillsWhatCannotStop(t *testing.T) {
	got, j := handleLog(t, false, errors.New("a process of the sandbox kept running after SIGSTOP"), syscall.SIGTSTP)
	if got != "stop-sandbox warn kill " {
		t.Errorf("Ctrl-Z with a sandbox that cannot be stopped: %q, want %q", got, "stop-sandbox warn kill ")
	}
	if j.stopped {
		t.Error("handle marked the run stopped")
	}
	if got, _ := handleLog(t, false, nil, syscall.SIGTSTP); got != "stop-sandbox stop-self(20) " {
		t.Errorf("Ctrl-Z: %q, want %q", got, "stop-sandbox stop-self(20) ")
	}
}
