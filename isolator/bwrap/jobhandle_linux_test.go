package bwrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"golang.org/x/sys/unix"
)

// handleLog runs handle on sigs with its effects recorded: the stop of the sandbox
// (stopErr is its result), devsandbox's own stops, the kill and the warnings.
func handleLog(t *testing.T, background bool, stopErr error, sigs ...syscall.Signal) (string, *jobControl) {
	t.Helper()
	var log strings.Builder
	j := &jobControl{stdinTerm: true,
		stopAll:    func() error { log.WriteString("stop-sandbox "); return stopErr },
		self:       func(s syscall.Signal) { fmt.Fprintf(&log, "stop-self(%d) ", s) },
		background: func() bool { return background },
	}
	for _, s := range sigs {
		j.handle(s, func(f string, a ...any) { log.WriteString("warn ") }, func() { log.WriteString("kill ") },
			func() (os.Signal, bool) { return nil, false }, func(os.Signal) {})
	}
	return log.String(), j
}

// SIGTTIN and SIGTTOU stop the run only while devsandbox is in the background: in
// the foreground they are late copies of a stop already acted on, and stopping
// then would leave the user's foreground job stopped by a signal the shell did not
// send (the terminal would read as hung).
func TestHandleTerminalStopsOnlyInBackground(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTTIN, syscall.SIGTTOU} {
		if got, _ := handleLog(t, false, nil, sig); got != "" {
			t.Errorf("signal %d in the foreground: %q, want nothing done", sig, got)
		}
		want := fmt.Sprintf("stop-sandbox stop-self(%d) ", sig)
		if got, _ := handleLog(t, true, nil, sig); got != want {
			t.Errorf("signal %d in the background: %q, want %q", sig, got, want)
		}
	}
}

// A sandbox that cannot be stopped is killed, and devsandbox does not stop: the
// shell never shows a job stopped whose command runs on and reads the terminal.
func TestHandleKillsWhatCannotStop(t *testing.T) {
	got, j := handleLog(t, false, errors.New("a process of the sandbox kept running after SIGSTOP"), syscall.SIGTSTP)
	if got != "stop-sandbox warn kill " {
		t.Errorf("Ctrl-Z with a sandbox that cannot be stopped: %q, want %q", got, "stop-sandbox warn kill ")
	}
	if j.stopped {
		t.Error("handle marked the run stopped")
	}
	if got, _ := handleLog(t, false, nil, syscall.SIGTSTP); got != "stop-sandbox stop-self(20) " {
		t.Errorf("Ctrl-Z: %q, want %q", got, "stop-sandbox stop-self(20) ")
	}
}

// A command that ended as Ctrl-Z came is not reported stopped: the stop (which finds
// it ended) is undone and devsandbox does not stop, so the shell reports the
// command's exit, as for a native command exiting as Ctrl-Z arrives.
func TestHandleEndedCommandDoesNotStop(t *testing.T) {
	var log strings.Builder
	j := &jobControl{stdinTerm: true,
		stopAll:    func() error { log.WriteString("stop-sandbox "); return nil },
		self:       func(s syscall.Signal) { fmt.Fprintf(&log, "stop-self(%d) ", s) },
		background: func() bool { return false },
		ended:      func() bool { log.WriteString("ended? "); return true },
	}
	j.handle(syscall.SIGTSTP, func(string, ...any) { log.WriteString("warn ") }, func() { log.WriteString("kill ") },
		func() (os.Signal, bool) { return nil, false }, func(os.Signal) {})
	if got := log.String(); got != "stop-sandbox ended? " || j.stopped {
		t.Errorf("Ctrl-Z as the command ended: %q (stopped %v), want %q and not stopped", got, j.stopped, "stop-sandbox ended? ")
	}
}

// initEnded reads the init's end, or its command's (its first child), from /proc.
func TestInitEnded(t *testing.T) {
	start := func(script string) *exec.Cmd {
		c := exec.Command("/bin/sh", "-c", script)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	// A child that runs: not ended.
	alive := start("sleep 100 & exec sleep 100")
	// Its child is forked before the exec: wait for the exec'd sleep (comm "sleep").
	waitFor(t, func() bool { return comm(alive.Process.Pid) == "sleep" && hasChild(alive.Process.Pid) })
	if initEnded(alive.Process.Pid) {
		t.Errorf("an init whose command runs read as ended")
	}
	// A child that exited and is not reaped (a zombie): ended.
	zombie := start("/bin/true & exec sleep 100")
	waitFor(t, func() bool {
		return comm(zombie.Process.Pid) == "sleep" && hasChild(zombie.Process.Pid) && initEnded(zombie.Process.Pid)
	})
	// No child left (reaped): ended.
	none := start("exec sleep 100")
	waitFor(t, func() bool { return comm(none.Process.Pid) == "sleep" })
	if !initEnded(none.Process.Pid) {
		t.Errorf("an init with no child read as running")
	}
	// Gone: ended.
	_ = none.Process.Kill()
	_ = none.Wait()
	if !initEnded(none.Process.Pid) {
		t.Errorf("a reaped init read as running")
	}
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

func hasChild(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	return len(strings.Fields(string(b))) > 0
}

// waitFor polls cond (a state of other processes, which sends no event) up to 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the processes did not reach the state in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// With the pidfd of the command that the init's report carries, the command reads
// as ended once it has exited, even reaped by an init that has another child
// started before it (a publisher of a port, the command's orphans): the init's
// children alone read that as running. A command that runs reads as running. Real
// processes; this test's process plays the init.
func TestCommandEndedThroughPidfd(t *testing.T) {
	other := exec.Command("sleep", "100") // the init's older child: it runs on
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Skipf("no pidfds here: %v", err)
	}
	j := &jobControl{cmdPid: os.Getpid(), cmdPidfd: os.NewFile(uintptr(fd), "command pidfd")}
	defer j.cmdPidfd.Close()
	if j.commandEnded() {
		t.Error("a command that runs read as ended")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait() // reaped, as the init reaps it
	if !j.commandEnded() {
		t.Error("a command reaped by an init with another child running read as running")
	}
	if initEnded(os.Getpid()) {
		t.Error("the init's children alone read the command as ended: the case is not the one the pidfd is for")
	}
}

// A stop that waits (a process of the sandbox in uninterruptible sleep: a write or
// rename under way, waited for up to jobstop.StopBound) says what it waits for once
// it took jobstop.NoteAfter, in the foreground: Ctrl-Z followed by seconds without a
// word reads as a hang. The stop here returns once the note is said (or after 10 s
// without one); in the background nothing is said (the write could be one more
// SIGTTOU), and a stop done at once says nothing either.
func TestHandleSaysWhatASlowStopWaits(t *testing.T) {
	for _, background := range []bool{false, true} {
		noted := make(chan string, 4)
		j := &jobControl{stdinTerm: true,
			stopAll: func() error {
				select {
				case <-noted:
				case <-time.After(10 * time.Second):
				}
				return nil
			},
			self:       func(syscall.Signal) {},
			background: func() bool { return background },
		}
		var said []string
		sig := syscall.SIGTSTP
		if background {
			sig = syscall.SIGTTIN
			j.stopAll = func() error { time.Sleep(jobstop.NoteAfter + 200*time.Millisecond); return nil } // the note's moment passed
		}
		start := time.Now()
		j.handle(sig, func(f string, a ...any) { m := fmt.Sprintf(f, a...); said = append(said, m); noted <- m }, func() {},
			func() (os.Signal, bool) { return nil, false }, func(os.Signal) {})
		took := time.Since(start)
		if background {
			if len(noted) != 0 {
				t.Errorf("a slow stop in the background said %q, want nothing", <-noted)
			}
			continue
		}
		if len(said) != 1 || said[0] != jobstop.SlowStopNote || took >= 10*time.Second {
			t.Fatalf("a stop that waited %v said %q, want %q after %v", took.Round(time.Millisecond), said, jobstop.SlowStopNote, jobstop.NoteAfter)
		}
	}
	if got, _ := handleLog(t, false, nil, syscall.SIGTSTP); got != "stop-sandbox stop-self(20) " {
		t.Errorf("a stop done at once: %q, want %q", got, "stop-sandbox stop-self(20) ")
	}
}
