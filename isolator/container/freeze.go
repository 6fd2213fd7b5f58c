package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Pauser pauses and unpauses one container through its engine (the Engine API's
// pause, podman's): the engine freezes every process of the container's cgroup, so
// none can go on, whatever it did to its process group.
type Pauser struct {
	Pause, Unpause func(ctx context.Context) error
}

// pauseBound bounds one call to the engine to pause or unpause.
const pauseBound = 10 * time.Second

// stopAnswerBound bounds the wait for the init's answer to a stop (its own bound,
// jobstop.StopBound, and the engine's relay of the frame and of the answer).
const stopAnswerBound = 5 * time.Second

// Freeze returns the freeze function of a run's handoff.Freezer: freeze(true)
// freezes the command, or reports that it had ended (true), freeze(false) thaws
// it.
//
// A stop first asks the init (wire.FrameStop) to stop the session's processes: each
// of the container's, or in a kept container each the session's command started,
// wherever it went. Its answer comes once each is seen stopped, and says whether the
// command had ended by then (wire.StopEnded: the init has continued what it stopped,
// and goes on to its exit; freeze(true) returns true, and devsandbox does not stop:
// the shell would show a job stopped whose command is over). An init whose output
// ends before it answers (the command ended on its own as the stop came) is gone,
// and what it ran with it: the same. Only an answer from the init tells these apart
// from a stop of a running command, whose result (the command stopped) lasts: the
// command, stopped, can no longer end.
//
// Then, where the engine can, the container is paused too (pz): the engine freezes
// every process of the container's cgroup, whatever it did to its process group;
// freeze(false) unpauses it, then has the init continue what it stopped
// (wire.FrameGo). Where the engine cannot pause (a rootless engine on cgroup v1,
// podman with cgroupfs; errOut is told so once), or pz is nil (an exec in a kept
// container, whose pause would freeze the other sessions of the container too), the
// init's stop is the freeze. When it is not confirmed (a process kept running, no
// answer within stopAnswerBound, an init of another job-control protocol) and no
// pause holds, errOut is told so and end ends the session (the init kills what it
// runs), so that devsandbox, which stops next, never shows a command stopped that
// may be running and reading the terminal. Either way the command gets no keys
// typed meanwhile: devsandbox and its copy of stdin are stopped.
func (s *Session) Freeze(pz *Pauser, errOut io.Writer, end func()) func(stop bool) (ended bool) {
	paused, told := false, false
	return func(stop bool) bool {
		ctx, cancel := context.WithTimeout(context.Background(), pauseBound)
		defer cancel()
		if !stop {
			if paused {
				paused = false
				if err := pz.Unpause(ctx); err != nil {
					fmt.Fprintf(errOut, "devsandbox: the engine could not unpause the container: %v; `docker unpause` (podman unpause) goes on with it\n", err)
				}
			}
			_ = s.frame(wire.FrameGo, nil)
			return false
		}
		err := s.stopSession(stopAnswerBound)
		if errors.Is(err, errCommandEnded) || errors.Is(err, errInitGone) {
			return true
		}
		if pz != nil && !errors.Is(err, errJobSkew) {
			pauseErr := pz.Pause(ctx)
			if pauseErr == nil {
				paused = true
				return false
			}
			if !told {
				told = true
				fmt.Fprintf(errOut, "devsandbox: the engine cannot pause the container (%v): while devsandbox is stopped, the container's init stops the command's processes instead\n", pauseErr)
			}
		}
		if err != nil {
			fmt.Fprintf(errOut, "devsandbox: the sandbox is ended: devsandbox was stopped, and %v, where it could read your terminal\n", err)
			if end != nil {
				end()
			}
		}
		return false
	}
}

// errInitGone is stopSession's error when the init is gone (its stream or its output
// ended) before it answered: what it ran went with it, and nothing is left to stop.
var errInitGone = errors.New("the container's init is gone")

// errCommandEnded is stopSession's error when the init answered that the command
// had ended by the stop (wire.StopEnded).
var errCommandEnded = errors.New("the command had ended")

// errJobSkew is stopSession's error when the init answered in another job-control
// protocol (wire.StopMarkerV1).
var errJobSkew = fmt.Errorf("the container's init is from another build: it answered the stop in job-control protocol 1, and this devsandbox speaks %d; install devsandbox and its helpers together from one build (make install, or scripts/install.sh), and remove kept containers made by another (devsandbox sandboxes rm)", wire.JobProtocol)

// stopSession asks the init to stop the session's processes and waits up to bound
// for its answer: nil once it answered that each stopped, errCommandEnded when it
// answered that the command had ended, errInitGone when it is gone first.
func (s *Session) stopSession(bound time.Duration) error {
	if s.report == nil {
		return errors.New("the session has no report to answer on")
	}
	token := newNonce()
	answer := s.report.Await(wire.StopAnswer(token, wire.StopStopped), wire.StopAnswer(token, wire.StopRunning),
		wire.StopAnswer(token, wire.StopEnded), wire.StopMarkerV1(token, true), wire.StopMarkerV1(token, false))
	defer s.report.Forget(answer)
	if err := s.frame(wire.FrameStop, []byte(token)); err != nil {
		if errors.Is(err, errSessionOver) || streamEnded(err) {
			return errInitGone
		}
		return fmt.Errorf("the stop could not be sent to the container's init (%w)", err)
	}
	// The init reads frames once the command started: the bound runs from its
	// report (ready, or a failure, after which nothing runs). Its output's end
	// (Report.Over) is its exit: a stop that raced the command's own end finds the
	// init gone before it answers, and what it ran with it (the container's init; a
	// session's ends its session first, the keeper what is left). Its stream, the
	// only way to the user's terminal, is closed. Nothing is left to stop: the stop
	// is done, and the run's status is the command's.
	select {
	case <-s.report.Seen():
	case <-s.report.Over():
		return errInitGone
	case <-time.After(readyBound):
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case a := <-answer:
		switch a {
		case 0:
			return nil
		case 1:
			return fmt.Errorf("a process of the sandbox kept running after SIGSTOP for %s", jobstopBound)
		case 2:
			return errCommandEnded
		}
		return errJobSkew
	case <-s.report.Over():
		return errInitGone
	case <-t.C:
		return fmt.Errorf("the container's init did not confirm within %s that the sandbox's processes stopped", bound)
	}
}

// readyBound bounds the wait for the init's report before a stop is waited for.
const readyBound = 30 * time.Second

// errSessionOver is frame's error once the session is closed.
var errSessionOver = errors.New("the session is over")

// jobstopBound is the init's own bound on a stop (jobstop.StopBound), as told.
const jobstopBound = 2 * time.Second

// frame sends a frame to the init once the hello is out (no frame may precede it).
func (s *Session) frame(typ byte, p []byte) error {
	select {
	case <-s.stop:
		return errSessionOver
	case <-s.helloSent:
	}
	return s.st.Frame(typ, p)
}
