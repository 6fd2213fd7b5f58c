package projlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSharedWaitsForExclusive: runs share the lock; while prune holds it, a run waits
// (saying so once) and gets it as soon as prune is done.
func TestSharedWaitsForExclusive(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "app-0123abcd")
	r1, err := Shared[struct{}](context.Background(), state, func() { t.Error("a run waited for another run") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := TryExclusive(root, "app-0123abcd"); ok || err != nil {
		t.Fatalf("TryExclusive while a run starts = %v, %v; want false, nil", ok, err)
	}
	r1()
	unlock, ok, err := TryExclusive(root, "app-0123abcd")
	if !ok || err != nil {
		t.Fatalf("TryExclusive with no run = %v, %v; want true, nil", ok, err)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock made the state directory (%v): it must live beside it", err)
	}
	waiting := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		release, err := Shared[struct{}](context.Background(), state, func() { close(waiting) }, nil)
		if err == nil {
			release()
		}
		done <- err
	}()
	<-waiting
	select {
	case err := <-done:
		t.Fatalf("the run got the lock while prune held it (%v)", err)
	default:
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSharedCancelled: a run waiting for prune ends with its context or a signal,
// with the class of each, and does not take the lock once prune is done.
func TestSharedCancelled(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "app-0123abcd")
	unlock, ok, err := TryExclusive(root, "app-0123abcd")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Shared[struct{}](ctx, state, cancel, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v, want context.Canceled", err)
	}
	sig := make(chan os.Signal, 1)
	_, err = Shared(context.Background(), state, func() { sig <- os.Interrupt }, sig)
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("interrupted wait: %v, want ErrInterrupted", err)
	}
	unlock()
	// The waits that ended took nothing, then or later: prune takes the lock at once,
	// every time.
	for range 100 {
		unlock, ok, err := TryExclusive(root, "app-0123abcd")
		if !ok || err != nil {
			t.Fatalf("TryExclusive after the waits ended = %v, %v; want true, nil", ok, err)
		}
		unlock()
	}
}

func TestSharedRefusesRelative(t *testing.T) {
	if _, err := Shared[struct{}](context.Background(), "state/app", nil, nil); err == nil {
		t.Error("a relative state directory was taken")
	}
}

// BenchmarkSharedRelease is what the lock adds to every launch: the lock file exists
// after a project's first run.
func BenchmarkSharedRelease(b *testing.B) {
	state := filepath.Join(b.TempDir(), "app-0123abcd")
	for b.Loop() {
		release, err := Shared[struct{}](context.Background(), state, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
