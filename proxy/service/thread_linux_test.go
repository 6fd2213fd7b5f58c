package service

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStopEndsNoThread: the proxy's start and stop end no thread of this process.
// The kernel sends a child's parent-death signal when the THREAD that forked it
// exits, not the process, and the Go runtime ends a thread whose goroutine returns
// while locked to it (runtime.LockOSThread). devsandbox starts bwrap with
// Pdeathsig SIGKILL from whichever thread its Run goroutine is on; a thread the
// proxy's goroutine locked and ended at the run's end killed bwrap when it was that
// one, after the command had done its work, before bwrap had exited (a run that
// exited 137 with nothing said, under load: bwrap slow to exit while the proxy
// stopped). The witnesses here stand for bwrap: children with a SIGKILL
// parent-death signal started from this goroutine, on whatever threads it runs on,
// between proxy starts and stops; each must outlive every stop.
func TestStopEndsNoThread(t *testing.T) {
	dir := shortTemp(t)
	var witnesses []int
	t.Cleanup(func() {
		for _, pid := range witnesses {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	})
	for i := range 30 {
		pid, _, err := syscall.StartProcess("/bin/sleep", []string{"sleep", "600"}, &syscall.ProcAttr{
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
		if err != nil {
			t.Fatal(err)
		}
		witnesses = append(witnesses, pid)
		sock := filepath.Join(dir, "p.sock")
		marker := filepath.Join(dir, "stopped")
		stop, err := spawn(os.Args[0], SettingsOf(fakePlan(sock, marker)), []string{fakeProxyEnv + "=serve"}, sock, Options{Bound: 5 * time.Second, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		if line := answer(t, sock); line != "ok\n" { // the proxy runs: its goroutine is on its thread
			t.Fatalf("round %d: the proxy answered %q", i, line)
		}
		stop()
		_ = os.Remove(marker)
	}
	// A thread ended by the last stop ends just after it returned: its witnesses'
	// SIGKILL is then on its way; what has not come in a second did not come.
	deadline := time.Now().Add(time.Second)
	dead := 0
	var sig syscall.Signal
	for _, pid := range witnesses {
		if s, gone := waitSignal(t, pid, deadline); gone {
			dead, sig = dead+1, s
		}
	}
	if dead > 0 {
		t.Fatalf("%d of %d children started with a parent-death signal from this process (as devsandbox starts bwrap) died (%v) while this process lives: a thread that started them was ended (a goroutine returned locked to its thread)", dead, len(witnesses), sig)
	}
}

// waitSignal waits until deadline for the child pid to exit and returns the signal
// that killed it (0 for an exit) and whether it is gone (then reaped).
func waitSignal(t *testing.T, pid int, deadline time.Time) (syscall.Signal, bool) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, max(0, int(time.Until(deadline).Milliseconds())))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return 0, false
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		return ws.Signal(), true
	}
}
