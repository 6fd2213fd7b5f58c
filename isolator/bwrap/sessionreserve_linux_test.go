package bwrap

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
)

// heldSession registers, for p's state directory, a Session as Begin leaves one (its
// reserve's watch aside), and returns the breach Begin's watch would make.
func heldSession(t *testing.T, p *isolator.Plan) (*Session, func(error)) {
	t.Helper()
	s := &Session{state: p.StateDir, stopped: make(chan struct{})}
	s.low, s.setLow = context.WithCancelCause(context.Background())
	sessions.Lock()
	sessions.n[s.state] = append(sessions.n[s.state], s)
	sessions.Unlock()
	t.Cleanup(func() {
		sessions.Lock()
		delete(sessions.n, s.state)
		sessions.Unlock()
		s.setLow(errEnded)
	})
	breach := func(err error) { // as Begin's watch does, in this order
		s.lowErr = err
		close(s.stopped)
		s.setLow(err)
	}
	return s, breach
}

// Once a library Session has seen the disk reserve breached, a command started
// under it afterwards is refused (inSession: WrapArgv and Command), and a command
// already started has its context ended with the LowError (stopOnLow): the library's
// reserve is kept for commands, not only signalled through Stopped.
// TestDiskReserveLibrary shows the stop end to end; neither part alone.
func TestBreachedSessionStopsItsCommands(t *testing.T) {
	p := &isolator.Plan{StateDir: t.TempDir()}
	p.Tmp.Kind = "tmpfs"
	_, breach := heldSession(t, p)
	held, err := inSession(p)
	if err != nil {
		t.Fatalf("a held project before any breach: %v", err)
	}
	ctx := stopOnLow(context.Background(), held)
	low := &diskguard.LowError{Path: p.StateDir, Avail: 1, Reserve: 2}
	breach(low)

	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a running command's context did not end 30s after its Session saw the reserve breached")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, diskguard.ErrLow) || !errors.Is(cause, isolator.ErrStopNow) {
		t.Errorf("the command's context ended with %v; want the LowError (ErrLow, ErrStopNow)", cause)
	}
	if _, err := inSession(p); !errors.Is(err, diskguard.ErrLow) || !strings.Contains(err.Error(), "the command did not run") {
		t.Errorf("a command after the breach: inSession = %v; want it refused with the LowError", err)
	}
}
