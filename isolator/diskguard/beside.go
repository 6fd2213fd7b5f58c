package diskguard

import (
	"context"
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// Beside is Run for a launch that gates its command's start itself (the bwrap
// init's go-ahead): the reserve's guard is made and first read on a goroutine of
// its own (Begin) while the launch goes on, and the launch asks for the verdict
// (Ready) at the last moment before it lets the command start. Nothing of the
// command may run before Ready returned nil: the caller's gate is what keeps the
// reserve in force from the command's first instruction.
//
// Without a reserve, run gets a nil *Pending, whose Begin does nothing and whose
// Ready returns nil. Otherwise what Run says of the watch and of a run the reserve
// stopped holds from Ready on; a run that never called Ready (it failed before)
// returns as it did, once the guard's goroutine is done and the pins are closed.
func Beside(ctx context.Context, p *isolator.Plan, run func(context.Context, *Pending) (int, error)) (int, error) {
	if p.Limits.DiskReserve == 0 {
		return run(ctx, nil)
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	pd := &Pending{p: p, ctx: runCtx, stop: stop}
	code, err := run(runCtx, pd)
	stop(nil)
	pd.end()
	if low := lowCause(runCtx); low != nil {
		return code, fmt.Errorf("stopped the run: %w", low)
	}
	return code, err
}

// Pending is Beside's guard: made by Begin, waited for by Ready.
type Pending struct {
	p    *isolator.Plan
	ctx  context.Context
	stop context.CancelCauseFunc

	done    chan struct{} // closed once For and the first Check returned; nil before Begin
	g       Guard
	release func()
	err     error
	w       *watch // set by a Ready that passed
}

// Begin makes the guard (For) and reads the free space once (Check) on a goroutine
// of its own. Call it once the launch has made the host directories the sandbox
// writes (a directory made later is not pinned: For skips what is not there).
func (pd *Pending) Begin() {
	if pd == nil || pd.done != nil {
		return
	}
	pd.done = make(chan struct{})
	go func() {
		defer close(pd.done)
		g, release, err := For(pd.p)
		if err == nil {
			if err = g.Check(); err != nil {
				release()
			}
		}
		pd.g, pd.release, pd.err = g, release, err
	}()
}

// Ready waits for Begin's guard (it begins it if Begin was not called) and returns
// why the command must not run: the reserve is already breached, or it cannot be
// kept. Once it returns nil, the guard watches the free space until the run ends.
func (pd *Pending) Ready() error {
	if pd == nil {
		return nil
	}
	pd.Begin()
	<-pd.done
	if pd.err != nil {
		return fmt.Errorf("the command did not run: %w", pd.err)
	}
	if pd.w == nil {
		pd.w = &watch{g: pd.g, ctx: pd.ctx, next: After(Interval), stop: pd.stop}
		pd.w.start()
	}
	return nil
}

// end stops the watch, if any, waits for Begin's goroutine, if any, and closes the
// pins.
func (pd *Pending) end() {
	if pd.w != nil {
		pd.w.end()
	}
	if pd.done == nil {
		return
	}
	<-pd.done
	if pd.err == nil {
		pd.release()
	}
}
