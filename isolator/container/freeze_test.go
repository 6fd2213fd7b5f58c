package container

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// fakeInit reads the frames a Session writes and answers a stop on the report as the
// init does (answer: "stopped", "running", "ended", "v1" for an init of job-control
// protocol 1 that stopped everything, or "" for no answer; "exit": the init exits as
// the stop arrives, its command having ended, and its output ends without an
// answer). It records the frames' types.
type fakeInit struct {
	report *wire.Report
	answer string
	buf    bytes.Buffer
	types  strings.Builder
}

func (f *fakeInit) Write(p []byte) (int, error) {
	f.buf.Write(p)
	for {
		typ, payload, err := wire.ReadFrame(&f.buf)
		if err != nil {
			return len(p), nil
		}
		f.types.WriteByte(typ)
		if typ == wire.FrameStop && f.answer == "exit" {
			_ = f.report.Flush()
			continue
		}
		switch {
		case typ != wire.FrameStop || f.answer == "":
		case f.answer == "v1":
			_, _ = f.report.Write([]byte(wire.StopMarkerV1(string(payload), true)))
		default:
			_, _ = f.report.Write([]byte(wire.StopAnswer(string(payload), f.answer)))
		}
	}
}

// Freeze asks the init to stop the session's processes first, and returns once it
// answered; then it pauses the container through its engine where it can (an engine
// that cannot pause, an exec in a kept container: the init's stop alone), and has
// the processes continued after. An answer that one kept running ends the session
// unless the engine paused; an answer that the command had ended (or the init's exit
// before it answers) freezes nothing and is reported (freeze(true) true), without a
// pause or a message; an init of job-control protocol 1 ends the session, saying
// why. Each case's whole transcript is compared: the engine's calls, the frames to
// the init, the notes, the end, what freeze(true) returned.
func TestFreeze(t *testing.T) {
	skew := "devsandbox: the sandbox is ended: devsandbox was stopped, and the container's init is from another build: it answered the stop in job-control protocol 1, and this devsandbox speaks 2; install devsandbox and its helpers together from one build (make install, or scripts/install.sh), and remove kept containers made by another (devsandbox sandboxes rm), where it could read your terminal\n"
	for _, tc := range []struct {
		name     string
		pauser   bool
		pauseErr error
		answer   string
		// calls is the engine's calls, frames the frames' types sent to the init.
		calls, frames, note string
		ended               bool
		// over is what freeze(true) returned, each time.
		over bool
	}{
		{name: "the engine pauses", pauser: true, answer: "stopped", calls: "pause unpause pause unpause ", frames: "ZGZG"},
		// The init's stop is not confirmed, but the engine's pause holds.
		{name: "the engine pauses a process that kept running", pauser: true, answer: "running", calls: "pause unpause pause unpause ", frames: "ZGZG"},
		{name: "the command had ended", pauser: true, answer: "ended", frames: "ZGZG", over: true},
		{name: "the command had ended in a kept container", answer: "ended", frames: "ZGZG", over: true},
		{name: "an init of protocol 1", pauser: true, answer: "v1", frames: "ZGZG", ended: true, note: strings.Repeat(skew, 2)},
		{name: "the engine cannot pause", pauser: true, pauseErr: errors.New("cgroups not configured"), answer: "stopped",
			calls:  "pause pause ",
			frames: "ZGZG",
			note:   "devsandbox: the engine cannot pause the container (cgroups not configured): while devsandbox is stopped, the container's init stops the command's processes instead\n"},
		{name: "an exec in a kept container", answer: "stopped", frames: "ZGZG"},
		{name: "a process kept running", answer: "running", frames: "ZGZG", ended: true,
			note: strings.Repeat("devsandbox: the sandbox is ended: devsandbox was stopped, and a process of the sandbox kept running after SIGSTOP for 2s, where it could read your terminal\n", 2)},
		// The stop races the command's own exit: the init is gone before it answers,
		// and what it ran with it. Nothing is left to stop or to end: no message, and
		// the run's status stays the command's.
		{name: "the init exited before it answered", answer: "exit", frames: "ZGZG", over: true},
		// The same race where the engine pauses: nothing is paused, and the engine
		// is not said unable to pause.
		{name: "the container exited before the pause", pauser: true, pauseErr: errors.New("container 0123abcd is not running"), answer: "exit",
			frames: "ZGZG", over: true},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			var note bytes.Buffer
			var calls strings.Builder
			hello := make(chan struct{})
			close(hello)
			report := wire.NewReport(&bytes.Buffer{})
			_, _ = report.Write([]byte(wire.ReadyMarker))
			init := &fakeInit{report: report, answer: tc.answer}
			s := &Session{st: NewStream(init), stop: make(chan struct{}), helloSent: hello, report: report}
			var pz *Pauser
			if tc.pauser {
				pz = &Pauser{
					Pause:   func(context.Context) error { calls.WriteString("pause "); return tc.pauseErr },
					Unpause: func(context.Context) error { calls.WriteString("unpause "); return nil },
				}
			}
			ended := false
			freeze := s.Freeze(pz, &note, func() { ended = true })
			for i := range 2 {
				if over := freeze(true); over != tc.over {
					t.Errorf("stop %d: freeze(true) = %v, want %v (the command had ended)", i, over, tc.over)
				}
				freeze(false)
			}
			if calls.String() != tc.calls {
				t.Errorf("the engine was asked %q, want %q", calls.String(), tc.calls)
			}
			if init.types.String() != tc.frames {
				t.Errorf("the init was sent frames %q, want %q", init.types.String(), tc.frames)
			}
			if note.String() != tc.note {
				t.Errorf("the user was told %q, want %q", note.String(), tc.note)
			}
			if ended != tc.ended {
				t.Errorf("the session was ended: %v, want %v", ended, tc.ended)
			}
			if code, err := s.Result(3); code != 3 || err != nil {
				t.Errorf("the run's result is (%d, %v), want the command's status 3", code, err)
			}
		})
	}
}

// A stop the init does not answer within the bound is not confirmed: stopSession
// says so, and never returns nil (devsandbox would show the command stopped).
func TestStopSessionUnanswered(t *testing.T) {
	hello := make(chan struct{})
	close(hello)
	report := wire.NewReport(&bytes.Buffer{})
	_, _ = report.Write([]byte(wire.ReadyMarker))
	s := &Session{st: NewStream(&fakeInit{report: report}), stop: make(chan struct{}), helloSent: hello, report: report}
	err := s.stopSession(20 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not confirm") {
		t.Fatalf("stopSession = %v, want the stop not confirmed", err)
	}
}

// The command shares the init's stderr: an answer with another token (the command
// cannot read the one sent) is output like any other, and confirms nothing.
func TestStopSessionForgedAnswer(t *testing.T) {
	hello := make(chan struct{})
	close(hello)
	var out bytes.Buffer
	report := wire.NewReport(&out)
	_, _ = report.Write([]byte(wire.ReadyMarker))
	forged := wire.StopAnswer("0123456789abcdef0123456789abcdef", wire.StopEnded)
	_, _ = report.Write([]byte(forged))
	s := &Session{stop: make(chan struct{}), helloSent: hello, report: report}
	s.st = NewStream(writerFunc(func(p []byte) (int, error) {
		// As the stop is sent: the forged answer arrives while it is waited for.
		_, _ = report.Write([]byte(forged))
		return len(p), nil
	}))
	if err := s.stopSession(50 * time.Millisecond); err == nil {
		t.Fatal("stopSession = nil with a forged answer, want the stop not confirmed")
	}
	if !strings.Contains(out.String(), forged) {
		t.Errorf("the forged answer was not passed on as output: %q", out.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
