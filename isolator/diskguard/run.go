package diskguard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
)

// Run is how every isolator's Run keeps p's reserve (p.Limits.DiskReserve) around its
// launch, run: refused before run is called when a file system the sandbox writes
// (Paths) is already under the reserve; else watched every Interval while run goes
// on, and when one falls under it, run's context ends with the *LowError as its
// cause (of the class isolator.ErrStopNow: the backend kills the sandbox at once).
// A run the reserve stopped returns its code with an error wrapping the *LowError;
// what the command wrote stays. Without a reserve, Run calls run with ctx.
func Run(ctx context.Context, p *isolator.Plan, run func(context.Context) (int, error)) (int, error) {
	g, release, err := For(p)
	if err != nil {
		return 0, fmt.Errorf("the command did not run: %w", err)
	}
	defer release()
	if g.Reserve == 0 {
		return run(ctx)
	}
	return g.Run(ctx, After(Interval), run)
}

// Schedule has f called once, later (After's: on a goroutine of its own once a
// delay has passed); the cancel it returns keeps f from being called if it has not
// been yet.
type Schedule func(f func()) (cancel func() bool)

// After is the Schedule of a timer of d (time.AfterFunc). A run shorter than d
// starts no goroutine and wakes no thread for the guard: its launch and its exit
// pay nothing for the watch but a timer set and stopped.
func After(d time.Duration) Schedule {
	return func(f func()) func() bool { return time.AfterFunc(d, f).Stop }
}

// For is the Guard of p's reserve, each watched directory held open from now on
// (PinStatfs: the sandbox may rename a directory it reaches, or put a link in its
// place, and the guard must not follow it elsewhere); release closes them. Its Paths
// are Paths(p) and, after them, each file system mounted below one of them at this
// moment (Below): binds are recursive, so the sandbox writes those too. A mount made
// there later is not watched by this run. Without a reserve the Guard checks
// nothing and holds nothing. A directory that cannot be opened for another reason
// than not being there, or a mount table that cannot be read, is an error: the run
// does not start.
func For(p *isolator.Plan) (g Guard, release func(), err error) {
	g = Guard{Reserve: p.Limits.DiskReserve, Paths: Paths(p), Statfs: HostStatfs}
	if g.Reserve == 0 {
		return g, func() {}, nil
	}
	pins, err := pinPaths(g.Paths)
	if err != nil {
		return Guard{}, func() {}, err
	}
	subs, err := pinSubmounts(pins, g.Paths)
	if err != nil {
		closeAll(pins)
		return Guard{}, func() {}, err
	}
	g.Paths = append(g.Paths, subs...)
	g.Statfs = pinned(pins)
	return g, func() { closeAll(pins) }, nil
}

// Run is the package's Run with the guard's Statfs, each read of the free space
// after the previous one (the first after the Check that lets run start) by next.
func (g Guard) Run(ctx context.Context, next Schedule, run func(context.Context) (int, error)) (int, error) {
	if err := g.Check(); err != nil {
		return 0, fmt.Errorf("the command did not run: %w", err)
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w := &watch{g: g, ctx: runCtx, next: next, stop: stop}
	w.start()
	code, err := run(runCtx)
	// The watch's last stop, if any, happens before the cause is read; no read of
	// the free space runs once end returns (the caller then closes the pins).
	stop(nil)
	w.end()
	if low := lowCause(runCtx); low != nil {
		return code, fmt.Errorf("stopped the run: %w", low)
	}
	return code, err
}

// watch is Guard.Run's watch: Check at each call next schedules until ctx ends or
// end is called; the first failure calls stop with its error and schedules no more.
type watch struct {
	g    Guard
	ctx  context.Context
	next Schedule
	stop context.CancelCauseFunc

	mu     sync.Mutex // held while a check runs, and by end
	ended  bool
	cancel func() bool
}

func (w *watch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel = w.next(w.tick)
}

func (w *watch) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || w.ctx.Err() != nil {
		return
	}
	if err := w.g.Check(); err != nil {
		w.stop(err)
		return
	}
	w.cancel = w.next(w.tick)
}

// end stops the watch: once it returns, no check runs nor will.
func (w *watch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	w.cancel()
}

// lowCause is the guard's cause of runCtx's end, if it was the guard that ended it
// first (not ctx, the caller's, nor the end of run).
func lowCause(runCtx context.Context) error {
	if low, ok := context.Cause(runCtx).(*LowError); ok {
		return low
	}
	return nil
}

// Script is what a dry run says of p's reserve, as comment lines of a script ("" without
// one): Run keeps it around the launch, which the rendered command line cannot show.
func Script(p *isolator.Plan) string {
	if p.Limits.DiskReserve == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# sandbox.disk_reserve: devsandbox refuses the run, or kills it at once, when the file system of one of these has under %s available (read every %s):\n", size(p.Limits.DiskReserve), Interval)
	for _, d := range Paths(p) {
		fmt.Fprintf(&b, "#   %s\n", termsafe.Line(d))
	}
	b.WriteString("#   and each file system mounted below one of them when the run starts\n")
	return b.String()
}
