package procs

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInspect: a child in a session of its own is found by its argv and its
// environment, its state and status read, its stop seen, and KillSession ends it.
func TestInspect(t *testing.T) {
	mark := fmt.Sprintf("%d", 100000+os.Getpid())
	cmd := exec.Command("sleep", mark)
	cmd.Env = []string{"PROCS_TEST=" + mark}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pid := cmd.Process.Pid
	if got := WithArgs("sleep", mark); !slices.Equal(got, []int{pid}) {
		t.Fatalf("WithArgs(sleep %s) = %v, want [%d]", mark, got, pid)
	}
	if got := OfUserWithEnv(os.Getuid(), "PROCS_TEST="+mark, "sleep "+mark); !slices.Equal(got, []int{pid}) {
		t.Fatalf("OfUserWithEnv = %v, want [%d]", got, pid)
	}
	if got := OfUserWithEnv(os.Getuid(), "PROCS_TEST=other", "sleep "+mark); len(got) != 0 {
		t.Fatalf("OfUserWithEnv of another environment = %v, want none", got)
	}
	if s := State(pid); s == "" {
		t.Fatalf("State(%d) = %q, want a state", pid, s)
	}
	if st := Status(pid); st["Name"] != "sleep" || st["PPid"] != fmt.Sprint(os.Getpid()) || !strings.HasPrefix(st["State"], State(pid)+" ") {
		t.Fatalf("Status(%d) = %q, want sleep, our child, its state", pid, st)
	}
	if Stopped(pid) {
		t.Fatalf("Stopped(%d) of a running sleep", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !Stopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Stopped(%d) is false a minute after SIGSTOP (state %q)", pid, State(pid))
		}
	}
	KillSession(pid)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("KillSession did not end the session's process")
	}
	if s := State(pid); s != "" {
		t.Fatalf("State of a reaped process = %q, want \"\"", s)
	}
	if Stopped(pid) || Status(pid) != nil {
		t.Fatalf("a reaped process: Stopped %v, Status %q", Stopped(pid), Status(pid))
	}
}
