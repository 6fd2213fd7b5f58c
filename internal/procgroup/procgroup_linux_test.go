package procgroup

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The end of the context kills the program's background child too, and Wait returns
// although the child had the program's stdout: killed with the group, it closes it.
func TestOwnKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep 1000 & echo $!; exec sleep 1000")
	Own(cmd, 10*time.Second)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(child, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	cancel()
	start := time.Now()
	_ = cmd.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v: it waited for the output's WaitDelay", d)
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 5000)
	for deadline := time.Now().Add(5 * time.Second); err == unix.EINTR && time.Now().Before(deadline); {
		// The Go runtime's preemption signal interrupts a poll: ask again (an
		// interrupted poll is no answer either way).
		n, err = unix.Poll(fds, int(time.Until(deadline)/time.Millisecond)+1)
	}
	if err != nil {
		t.Fatalf("waiting for the program's background child %d: %v", child, err)
	}
	if n == 0 {
		_ = unix.PidfdSendSignal(pidfd, syscall.SIGKILL, nil, 0)
		t.Errorf("the program's background child %d outlived the end of its context", child)
	}
}

// A program whose caller took the group back (SysProcAttr replaced) is killed alone,
// not left running.
func TestKillWithoutGroup(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Kill(cmd.Process); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the program was not killed")
	}
	if err := Kill(cmd.Process); err == nil {
		t.Error("Kill of a reaped program did not say it is done")
	}
}
