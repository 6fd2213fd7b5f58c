package planner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// droppable counts this process's droppable mappings (VmFlags "dp"): the runtime's
// vDSO getrandom state is one.
func droppable() int {
	b, _ := os.ReadFile("/proc/self/smaps")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmFlags:") && strings.Contains(l+" ", " dp ") {
			n++
		}
	}
	return n
}

// TestRandomLeavesVDSOAlone: random fills its buffer without setting up the
// runtime's vDSO getrandom state (a fresh process gains no droppable mapping), where
// x/sys/unix.Getrandom does (the control; without it, on a kernel without vDSO
// getrandom, the test proves nothing and skips).
func TestRandomLeavesVDSOAlone(t *testing.T) {
	if how := os.Getenv("PLANNER_RANDOM_CHILD"); how != "" {
		var b [32]byte
		before := droppable()
		if how == "unix" {
			_, _ = unix.Getrandom(b[:], 0)
		} else {
			random(b[:])
		}
		fmt.Printf("droppable %d %d %x\n", before, droppable(), b)
		return
	}
	child := func(how string) (before, after int, b []byte) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestRandomLeavesVDSOAlone$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PLANNER_RANDOM_CHILD="+how)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", how, err, out)
		}
		var hexb string
		if _, err := fmt.Sscanf(string(out), "droppable %d %d %s", &before, &after, &hexb); err != nil {
			t.Fatalf("%s: %v in %q", how, err, out)
		}
		return before, after, []byte(hexb)
	}
	if before, after, _ := child("unix"); after <= before {
		t.Skipf("unix.Getrandom added no droppable mapping (%d, then %d): this kernel has no vDSO getrandom", before, after)
	}
	before, after, b := child("random")
	if after != before {
		t.Errorf("random set up the vDSO getrandom state: droppable mappings %d, then %d", before, after)
	}
	if bytes.Equal(b, bytes.Repeat([]byte("0"), 64)) {
		t.Errorf("random left the buffer zero: %s", b)
	}
}
