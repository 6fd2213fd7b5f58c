package diskguard

import (
	"context"
	"fmt"
	"strings"
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
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	return g.Run(ctx, tick.C, run)
}

// For is the Guard of p's reserve, each watched directory held open from now on
// (PinStatfs: the sandbox may rename a directory it reaches, or put a link in its
// place, and the guard must not follow it elsewhere); release closes them. Without a
// reserve the Guard checks nothing and holds nothing. A directory that cannot be
// opened for another reason than not being there is an error: the run does not start.
func For(p *isolator.Plan) (g Guard, release func(), err error) {
	g = Guard{Reserve: p.Limits.DiskReserve, Paths: Paths(p), Statfs: HostStatfs}
	if g.Reserve == 0 {
		return g, func() {}, nil
	}
	statfs, release, err := PinStatfs(g.Paths)
	if err != nil {
		return Guard{}, func() {}, err
	}
	g.Statfs = statfs
	return g, release, nil
}

// Run is the package's Run with the guard's Statfs and the ticks given.
func (g Guard) Run(ctx context.Context, tick <-chan time.Time, run func(context.Context) (int, error)) (int, error) {
	if err := g.Check(); err != nil {
		return 0, fmt.Errorf("the command did not run: %w", err)
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		g.Watch(runCtx, tick, stop)
	}()
	code, err := run(runCtx)
	// The watch's last stop, if any, happens before the cause is read.
	stop(nil)
	<-watched
	if low := lowCause(runCtx); low != nil {
		return code, fmt.Errorf("stopped the run: %w", low)
	}
	return code, err
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
	return b.String()
}
