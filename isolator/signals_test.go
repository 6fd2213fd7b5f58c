package isolator

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A signal sent once the subscription is in effect waits in C instead of taking its
// default action (SIGUSR1's would end the test binary).
func TestCatchSignals(t *testing.T) {
	s := CatchSignals()
	s.Wait()
	defer s.Stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-s.C:
		if got != syscall.SIGUSR1 {
			t.Fatalf("caught %v, want SIGUSR1", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGUSR1 was not caught")
	}
}

// Stop waits for a subscription still being made, and may follow it at once.
func TestSignalsStopRightAway(t *testing.T) {
	CatchSignals().Stop()
}
