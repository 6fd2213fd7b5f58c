package handoff

import (
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
)

// jobControlled: the caller takes the job-control signals and hands them on
// (callerJob).
const jobControlled = true

// backgroundStdin is the command's stdin for a run whose stdin is in: /dev/null
// when in is the controlling terminal and the program started in the background
// (`devsandbox -- make &`), as a shell without job control gives an asynchronous
// command, so that the command never reads keys typed for the shell; in otherwise.
func backgroundStdin(in *os.File) *os.File {
	if !jobstop.StartedInBackground(in) {
		return in
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return in // read from the background, the terminal stops the run
	}
	return null
}

// callerJob is the caller's side of job control for a program's run: devsandbox is
// stopped (Ctrl-Z, a read of the terminal from the background) only once the
// program has frozen the command and stopped itself (JobStop), so the shell reports
// the job stopped when the command is; on SIGCONT the command is thawed (JobGo),
// unless stdin is the controlling terminal and devsandbox is in the background
// (`bg`): the command could then read keys typed for the shell, so it stays frozen
// and devsandbox stops again, as the kernel stops a background reader; `fg` goes on.
type callerJob struct {
	stdinTerm bool
	stopped   bool
	warn      func(string)
	// wait, when set, replaces stopWait (tests).
	wait time.Duration
}

// stopWait bounds the wait for the program to freeze the command and stop. The
// program bounds its own steps (the engine's pause, the init's report and its answer
// to a stop, container.Freeze) well within it.
const stopWait = 60 * time.Second

func (j *callerJob) handle(s os.Signal, p *Process, pending chan os.Signal) {
	sig, _ := s.(syscall.Signal)
	if j.stopped {
		// Running again: devsandbox was continued, whether or not its SIGCONT is
		// seen (a stop signal sent before the SIGCONT is taken discards it: the
		// program's read of the terminal from the background sends SIGTTIN to the
		// group as often as it tries).
		if j.stdinTerm && jobstop.Background() {
			select {
			case f := <-pending: // `kill %1`: the signal reaches the command
				if n, ok := f.(syscall.Signal); ok {
					p.Signal(Signal(n))
				}
			default:
				if !j.stopProgram(p) {
					j.stopped = false // gone: the run is over
					return
				}
				jobstop.StopSelf(syscall.SIGTTIN)
				return
			}
		}
		j.stopped = false
		_ = p.cmd.Process.Signal(syscall.SIGCONT) // continued alone (kill -CONT PID)
		p.Signal(JobGo)
	}
	switch sig {
	case syscall.SIGCONT:
		return
	case syscall.SIGTTIN, syscall.SIGTTOU:
		if !jobstop.Background() {
			return // a late copy of one already acted on
		}
	}
	if !j.stopProgram(p) {
		// The program is gone instead: the run is over (the command ended as the
		// stop came, and the program did not stop). The shell would show a job
		// stopped whose command is over: devsandbox goes on to its end, with the
		// command's status, as a native command that exits as Ctrl-Z comes.
		return
	}
	j.stopped = true
	jobstop.StopSelf(sig)
}

// stopProgram asks the program to freeze the command and stop, and returns once it
// is seen stopped, each thread of it (true), or gone (false: the program does not
// stop when the command had ended by the freeze, and goes on to its end). A program
// not seen stopped within stopWait is killed: the shell is never shown a job stopped
// whose command may be running and reading the terminal (the init kills what it ran
// once the program's stream ends).
func (j *callerJob) stopProgram(p *Process) bool {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	switch jobstop.GroupState(pid) {
	case 'T':
		return true // still stopped: continued was devsandbox alone
	case 'Z', 'X':
		return false
	}
	p.Signal(JobStop)
	wait := stopWait
	if j.wait > 0 {
		wait = j.wait
	}
	start := time.Now()
	deadline := start.Add(wait)
	note := jobstop.NoteAfter
	for {
		switch jobstop.GroupState(pid) {
		case 'T':
			return true
		case 'Z', 'X':
			return false
		}
		if note > 0 && time.Since(start) >= note {
			note = 0 // said once, and only in the foreground (from the background,
			// with the terminal's tostop, the write would be one more SIGTTOU)
			if !jobstop.Background() {
				j.warn("devsandbox: " + jobstop.SlowStopNote)
			}
		}
		if time.Now().After(deadline) {
			j.warn("devsandbox: the sandbox is ended: it was not seen frozen within " + wait.String() + " of the stop, and it could read your terminal")
			_ = p.cmd.Process.Kill()
			return true
		}
		time.Sleep(time.Millisecond) // the program asks the engine to pause, on the other CPU
	}
}

func controllingTerminal(in *os.File) bool { return jobstop.ControllingTerminal(in) }
