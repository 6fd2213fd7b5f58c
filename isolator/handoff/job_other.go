//go:build !linux

package handoff

import "os"

// jobControlled: job control of a program's run is Linux's only; elsewhere the
// signals take their default action (devsandbox and the program stop, the command
// goes on).
const jobControlled = false

func backgroundStdin(in *os.File) *os.File { return in }

type callerJob struct {
	stdinTerm bool
	stopped   bool
	warn      func(string)
}

func (j *callerJob) handle(os.Signal, *Process, chan os.Signal) {}

func controllingTerminal(*os.File) bool { return false }
