package bwrap

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The end of the guard's stdin, as devsandbox's death by SIGKILL closes it, has the
// guard kill the whole group: the leader and a process of the group that no one
// else would end. The wait then finds the leader killed by SIGKILL.
func TestGuardEndsTheGroupAtDevsandboxsEnd(t *testing.T) {
	stdio, err := newChildStdio(nil, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := startChild("/bin/sh", []string{"sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & exec sleep 1000"}, nil, stdio, nil, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.guard == nil {
		c.kill(syscall.SIGKILL)
		_, _ = c.wait()
		t.Fatal("a child leading its group has no guard")
	}
	// What devsandbox's death does to the guard: its stdin's only writer is gone.
	c.guard.w.Close()
	done := make(chan syscall.WaitStatus, 1)
	go func() { ws, _ := c.wait(); done <- ws }()
	select {
	case ws := <-done:
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the leader ended with %v, want killed by SIGKILL", ws)
		}
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
		t.Fatal("the guard did not kill its group within 10 s of its stdin's end")
	}
	// Killed, its members may still be zombies their new parent has not reaped.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || procGroup(stat) != c.pgid {
			continue
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] != "Z" {
			t.Errorf("process %s of the group is still running (state %s) after the guard's kill", e.Name(), f[0])
		}
	}
}
