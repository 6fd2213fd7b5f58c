package container

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Freeze pauses the container through its engine where it can, and only then:
// otherwise (an engine that cannot pause, an exec in a kept container) it stops the
// command's process group through the init, and continues it after. Each case's whole
// transcript is compared: the engine's calls, the frames to the init, the notes.
func TestFreeze(t *testing.T) {
	stopFrame := func(sig syscall.Signal) string {
		var b bytes.Buffer
		_ = NewStream(&b).Frame(wire.FrameSignal, []byte{byte(sig)})
		return b.String()
	}
	for _, tc := range []struct {
		name     string
		pauser   bool
		pauseErr error
		// calls is the engine's calls, frames the frames sent to the init.
		calls, frames, note string
	}{
		{name: "the engine pauses", pauser: true, calls: "pause unpause pause unpause "},
		{name: "the engine cannot pause", pauser: true, pauseErr: errors.New("cgroups not configured"),
			calls:  "pause pause ",
			frames: stopFrame(syscall.SIGSTOP) + stopFrame(syscall.SIGCONT) + stopFrame(syscall.SIGSTOP) + stopFrame(syscall.SIGCONT),
			note:   "devsandbox: the engine cannot pause the container (cgroups not configured): while devsandbox is stopped, only the command's process group is stopped; a process that left it goes on running\n"},
		{name: "an exec in a kept container",
			frames: stopFrame(syscall.SIGSTOP) + stopFrame(syscall.SIGCONT) + stopFrame(syscall.SIGSTOP) + stopFrame(syscall.SIGCONT)},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			var frames, note bytes.Buffer
			var calls strings.Builder
			hello := make(chan struct{})
			close(hello)
			s := &Session{st: NewStream(&frames), stop: make(chan struct{}), helloSent: hello}
			var pz *Pauser
			if tc.pauser {
				pz = &Pauser{
					Pause:   func(context.Context) error { calls.WriteString("pause "); return tc.pauseErr },
					Unpause: func(context.Context) error { calls.WriteString("unpause "); return nil },
				}
			}
			freeze := s.Freeze(pz, &note)
			for range 2 {
				freeze(true)
				freeze(false)
			}
			if calls.String() != tc.calls {
				t.Errorf("the engine was asked %q, want %q", calls.String(), tc.calls)
			}
			if frames.String() != tc.frames {
				t.Errorf("the init was sent %q, want %q", frames.String(), tc.frames)
			}
			if note.String() != tc.note {
				t.Errorf("the user was told %q, want %q", note.String(), tc.note)
			}
		})
	}
}
