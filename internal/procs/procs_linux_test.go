package procs

import (
	"os"
	"os/exec"
	"reflect"
	"testing"
)

// Strays are the processes adopted by pid 1 (what an ended exec left), at any depth;
// an exec'd process (parent 0) and its descendants are not, nor pid 1 itself.
func TestStrays(t *testing.T) {
	ps := []Proc{
		{1, 0},            // pid 1
		{10, 0}, {11, 10}, // an exec and its child
		{20, 1}, {21, 20}, // left by an ended exec, and its child
		{30, 11}, {31, 99}, // a grandchild; a child of a parent read late
		{40, 1}, // another orphan
	}
	lookup := func(pid int) int {
		if pid == 99 {
			return 10 // started after the listing: the exec's
		}
		return -1
	}
	if got, want := Strays(ps, 1, lookup), []int{20, 21, 40}; !reflect.DeepEqual(got, want) {
		t.Errorf("strays %v, want %v", got, want)
	}
}

func TestStatPPid(t *testing.T) {
	for line, want := range map[string]int{
		"12 (sh) S 7 12 12 0":         7,
		"12 (a) b) (c) R 0 1 1":       0,
		"12 (x":                       -1,
		"12 (x) S notanumber 1 1 1 1": -1,
	} {
		if got := statPPid([]byte(line)); got != want {
			t.Errorf("statPPid(%q) = %d, want %d", line, got, want)
		}
	}
}

// List lists every process of the pid namespace with its parent, as its stat
// file gives them: this test process and a child of its own are among them.
func TestListListsChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("starting sleep: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	parents := map[int]int{}
	for _, p := range List() {
		parents[p.Pid] = p.PPid
	}
	if pp, ok := parents[os.Getpid()]; !ok || pp != os.Getppid() {
		t.Errorf("this process: parent %d (listed %v), want %d", pp, ok, os.Getppid())
	}
	if pp, ok := parents[cmd.Process.Pid]; !ok || pp != os.Getpid() {
		t.Errorf("the child: parent %d (listed %v), want %d", pp, ok, os.Getpid())
	}
	if got, want := ParentPid(cmd.Process.Pid), os.Getpid(); got != want {
		t.Errorf("ParentPid(child) = %d, want %d", got, want)
	}
	if got := ParentPid(1 << 30); got != -1 {
		t.Errorf("parentPid of no process = %d, want -1", got)
	}
}
