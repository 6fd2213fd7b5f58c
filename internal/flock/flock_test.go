package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// locker takes an exclusive flock on a file of the test's, as krun's creation lock
// does: each try opens the file anew and closes it when the lock is held.
type locker struct {
	t     testing.TB
	path  string
	tries atomic.Int32 // calls of try
}

func newLocker(t testing.TB) *locker {
	l := &locker{t: t, path: filepath.Join(t.TempDir(), "x.lock")}
	if err := os.WriteFile(l.path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

// try is Take's try function.
func (l *locker) try() (*os.File, error) {
	l.tries.Add(1)
	return l.lock()
}

func (l *locker) lock() (*os.File, error) {
	f, err := os.OpenFile(l.path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", l.path, err)
	}
	return f, nil
}

// hold takes the lock on a descriptor of the test's; release drops it.
func (l *locker) hold() (release func()) {
	f, err := l.lock()
	if err != nil {
		l.t.Fatal(err)
	}
	return func() { f.Close() }
}

// free probes the lock: nil when it takes it without waiting (and drops it).
func (l *locker) free() error {
	f, err := l.lock()
	if err == nil {
		f.Close()
	}
	return err
}

// assertLeftAlone checks that a taker that gave up (after tries calls of its try
// function) takes the lock no more: it left no goroutine behind, and once the holder
// releases the lock, every probe finds it free and the taker tries no more.
func (l *locker) assertLeftAlone(release func(), tries int32) {
	l.t.Helper()
	if n := lingering(); n > 0 {
		l.t.Errorf("Take left %d goroutines behind", n)
	}
	release()
	for i := range 100 {
		if err := l.free(); err != nil {
			l.t.Fatalf("probe %d after the release: %v; the taker that gave up took the lock", i, err)
		}
	}
	if n := l.tries.Load(); n != tries {
		l.t.Errorf("the taker tried %d times after it gave up", n-tries)
	}
}

// lingering counts the goroutines Take started that still exist.
func lingering() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "created by github.com/devsandbox/devsandbox/internal/flock.Take")
}

func TestTakeFree(t *testing.T) {
	l := newLocker(t)
	f, err := Take[struct{}](context.Background(), l.try, func() { t.Error("waiting called for a free lock") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.free(); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("the lock is free while taken: %v", err)
	}
	f.Close()
}

// A waiter gets the lock once its holder releases it, not before.
func TestTakeWaits(t *testing.T) {
	l := newLocker(t)
	release := l.hold()
	waiting := make(chan struct{})
	type res struct {
		f   *os.File
		err error
	}
	done := make(chan res, 1)
	go func() {
		f, err := Take[struct{}](context.Background(), l.try, func() { close(waiting) }, nil)
		done <- res{f, err}
	}()
	<-waiting
	select {
	case r := <-done:
		t.Fatalf("Take returned while the lock was held: %v", r.err)
	default:
	}
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := l.free(); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("the lock is free while the waiter holds it: %v", err)
	}
	r.f.Close()
	if err := l.free(); err != nil {
		t.Errorf("the lock is held after the waiter released it: %v", err)
	}
}

// A taker whose context ends while the lock is held returns the context's cause at
// once and never takes the lock afterwards.
func TestTakeCancelled(t *testing.T) {
	l := newLocker(t)
	release := l.hold()
	ctx, cancel := context.WithCancelCause(context.Background())
	gaveUp := errors.New("the caller gave up")
	_, err := Take[struct{}](ctx, l.try, func() { cancel(gaveUp) }, nil)
	if !errors.Is(err, gaveUp) {
		t.Fatalf("Take = %v, want the context's cause", err)
	}
	l.assertLeftAlone(release, l.tries.Load())
}

// Likewise a taker that interrupt ends: ErrInterrupted.
func TestTakeInterrupted(t *testing.T) {
	l := newLocker(t)
	release := l.hold()
	sig := make(chan os.Signal, 1)
	_, err := Take(context.Background(), l.try, func() { sig <- os.Interrupt }, sig)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Take = %v, want ErrInterrupted", err)
	}
	l.assertLeftAlone(release, l.tries.Load())
}

// An error other than "held" ends the wait and is returned as is, on the first try
// and on a later one.
func TestTakeError(t *testing.T) {
	broken := errors.New("no locks here")
	for _, held := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			n, waited := 0, 0
			f, err := Take[struct{}](context.Background(), func() (*os.File, error) {
				n++
				if n <= held {
					return nil, fmt.Errorf("locking: %w", unix.EWOULDBLOCK)
				}
				return nil, broken
			}, func() { waited++ }, nil)
			if f != nil || err != broken {
				t.Errorf("Take = %v, %v; want nil, %v", f, err, broken)
			}
			if want := min(held, 1); waited != want {
				t.Errorf("waiting called %d times, want %d", waited, want)
			}
		})
	}
}

// BenchmarkTryHeld is what one try of a long wait costs: the lock file opened, the lock
// found held, the file closed.
func BenchmarkTryHeld(b *testing.B) {
	l := newLocker(b)
	release := l.hold()
	defer release()
	for b.Loop() {
		if _, err := l.lock(); !errors.Is(err, unix.EWOULDBLOCK) {
			b.Fatal(err)
		}
	}
}
