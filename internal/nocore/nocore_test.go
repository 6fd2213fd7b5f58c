package nocore

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestOffLowersOnlyTheSoftLimit(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_CORE, &old) })
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: old.Max, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	if err := Off(); err != nil {
		t.Fatal(err)
	}
	var now unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != 0 || now.Max != old.Max {
		t.Fatalf("RLIMIT_CORE after Off: soft %d hard %d, want soft 0 hard %d", now.Cur, now.Max, old.Max)
	}
	if err := Off(); err != nil { // already 0
		t.Fatal(err)
	}
}
