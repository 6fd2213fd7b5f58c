package diskguard

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestGuardRun: the run is refused before it starts under the reserve; stopped with
// a cause of the class isolator.ErrStopNow when the reserve is breached while it
// runs; left alone otherwise, and a caller's cancel is not taken for a breach.
func TestGuardRun(t *testing.T) {
	const gib = 1 << 30
	t.Run("refused", func(t *testing.T) {
		g := Guard{Reserve: gib, Paths: []string{"/p"}, Statfs: fakeStatfs(t, map[string]uint64{"/p": gib - 1}, nil)}
		code, err := g.Run(context.Background(), (&fakeTicks{}).schedule, func(context.Context) (int, error) {
			t.Error("the run started under the reserve")
			return 0, nil
		})
		if code != 0 || !errors.Is(err, ErrLow) {
			t.Errorf("Run = %d, %v; want it refused with ErrLow", code, err)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		var avail atomic.Uint64
		avail.Store(2 * gib)
		g := Guard{Reserve: gib, Paths: []string{"/p"}, Statfs: func(string) (uint64, error) { return avail.Load(), nil }}
		ticks := &fakeTicks{}
		code, err := g.Run(context.Background(), ticks.schedule, func(ctx context.Context) (int, error) {
			ticks.tick(t) // above: goes on
			avail.Store(gib / 2)
			ticks.tick(t) // under: the watch ends ctx
			// The read ran on this goroutine (tick): ctx has ended by now, or never will.
			if ctx.Err() == nil {
				t.Error("a read under the reserve did not end the run's context")
				return 0, nil
			}
			if !isolator.StopsNow(ctx) {
				t.Errorf("the run's context ended with %v; want the class isolator.ErrStopNow", context.Cause(ctx))
			}
			return 137, ctx.Err()
		})
		var low *LowError
		if code != 137 || !errors.As(err, &low) || low.Path != "/p" || !errors.Is(err, isolator.ErrStopNow) {
			t.Errorf("Run = %d, %v; want the run's code and the LowError", code, err)
		}
	})
	t.Run("above", func(t *testing.T) {
		g := Guard{Reserve: gib, Paths: []string{"/p"}, Statfs: fakeStatfs(t, map[string]uint64{"/p": 2 * gib}, nil)}
		ticks := &fakeTicks{}
		want := errors.New("the command's own failure")
		code, err := g.Run(context.Background(), ticks.schedule, func(ctx context.Context) (int, error) {
			ticks.tick(t)
			return 3, want
		})
		if code != 3 || err != want {
			t.Errorf("Run = %d, %v; want the run's own result", code, err)
		}
		if ticks.pending() {
			t.Error("a read of the free space is still scheduled after the run")
		}
	})
	t.Run("caller's cancel", func(t *testing.T) {
		g := Guard{Reserve: gib, Paths: []string{"/p"}, Statfs: fakeStatfs(t, map[string]uint64{"/p": 2 * gib}, nil)}
		ctx, cancel := context.WithCancel(context.Background())
		code, err := g.Run(ctx, (&fakeTicks{}).schedule, func(ctx context.Context) (int, error) {
			cancel()
			<-ctx.Done()
			return 130, nil
		})
		if code != 130 || err != nil {
			t.Errorf("Run = %d, %v; want the run's own result after the caller's cancel", code, err)
		}
	})
}

// fakeTicks is a Schedule whose calls the test makes (tick), one at a time.
type fakeTicks struct {
	mu sync.Mutex
	f  func()
}

func (k *fakeTicks) schedule(f func()) func() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.f = f
	return func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		was := k.f != nil
		k.f = nil
		return was
	}
}

// tick calls what is scheduled, as the timer would; the guard must have scheduled it.
func (k *fakeTicks) tick(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	f := k.f
	k.f = nil
	k.mu.Unlock()
	if f == nil {
		t.Fatal("the guard scheduled no read of the free space while the run goes on")
	}
	f()
}

func (k *fakeTicks) pending() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.f != nil
}

// TestAfterReadsAgain: with the real timer, the guard reads the free space again and
// again while the run goes on, and stops it once a file system falls under the reserve.
func TestAfterReadsAgain(t *testing.T) {
	const gib = 1 << 30
	var reads atomic.Int32
	g := Guard{Reserve: gib, Paths: []string{"/p"}, Statfs: func(string) (uint64, error) {
		if reads.Add(1) > 3 { // the Check before the run, then two reads above
			return gib / 2, nil
		}
		return 2 * gib, nil
	}}
	code, err := g.Run(context.Background(), After(time.Millisecond), func(ctx context.Context) (int, error) {
		// A bound, not a wait for a timing: the fourth read comes 4 ms in.
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			t.Error("the run's context did not end 30s after the guard's reads began")
		}
		return 137, nil
	})
	if code != 137 || !errors.Is(err, ErrLow) || reads.Load() != 4 {
		t.Errorf("Run = %d, %v after %d reads; want it stopped with ErrLow at the fourth read", code, err, reads.Load())
	}
}

// TestRunWithoutReserve: a Plan without a reserve reads no free space at all.
func TestRunWithoutReserve(t *testing.T) {
	p := &isolator.Plan{}
	p.Project.Dir = "/nonexistent/devsandbox-no-such-dir"
	code, err := Run(context.Background(), p, func(context.Context) (int, error) { return 7, nil })
	if code != 7 || err != nil {
		t.Errorf("Run = %d, %v; want the run's result", code, err)
	}
}

// TestScript: a dry run names the reserve and each watched directory once, a
// terminal's control characters spelled out; without a reserve it says nothing.
func TestScript(t *testing.T) {
	p := &isolator.Plan{}
	p.Project.Dir, p.SandboxHome, p.StateDir = "/p/proj", "/h/home", "/s/state\x1b[2J"
	p.Tmp.Kind = "session"
	p.Tmp.Dir = "/s/state\x1b[2J"
	if got := Script(p); got != "" {
		t.Errorf("Script without a reserve = %q; want nothing", got)
	}
	p.Limits.DiskReserve = 1 << 30
	want := "# sandbox.disk_reserve: devsandbox refuses the run, or kills it at once, when the file system of one of these has under 1.0 GiB available (read every 200ms):\n" +
		"#   /p/proj\n#   /h/home\n#   /s/state\\x1b[2J\n" +
		"#   and each file system mounted below one of them when the run starts\n"
	if got := Script(p); got != want {
		t.Errorf("Script =\n%s\nwant\n%s", got, want)
	}
}
