package handoff

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"golang.org/x/sys/unix"
)

// The test binary plays an idle program of several threads when asked: it says
// ready, then waits for its stdin to end.
func init() {
	if os.Getenv("HANDOFF_TEST") == "idle" {
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadByte()
		os.Exit(0)
	}
}

// stopProgram waits until every thread of the program is stopped, not its first
// alone: another thread, woken by the stop inside its read of the terminal (the copy
// of stdin), may still take keys typed for the shell before it stops. Here one
// thread of the stopped program is held out of the stop by tracing it ('t' while the
// first is 'T'): stopProgram must not take the program for stopped, and once its
// bound passed it says so and kills the program.
func TestStopProgramWaitsForEveryThread(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"HANDOFF_TEST=idle"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	tid := 0
	ended := false
	defer func() {
		if ended {
			return
		}
		_ = cmd.Process.Kill()
		if tid != 0 { // a traced thread's end is reported to the tracer first
			var ws unix.WaitStatus
			_, _ = unix.Wait4(tid, &ws, unix.WALL, nil)
		}
		_ = cmd.Wait()
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child said %q (%v)", line, err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		if n, _ := strconv.Atoi(e.Name()); n != pid && n != 0 {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Fatalf("the child has one thread (%d tasks)", len(tasks))
	}
	runtime.LockOSThread() // ptrace's requests come from the thread that attached
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(tid); err != nil {
		tid = 0
		needsComponent(t, "cannot trace the child's thread: %v", err)
	}
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the traced thread: wait4 = %v, status %#x", err, ws)
	}
	p := strconv.Itoa(pid)
	for deadline := time.Now().Add(30 * time.Second); jobstop.State(p) != 'T'; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child's first thread is %q 30s on, want 'T'", jobstop.State(p))
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var warned []string
	j := &callerJob{warn: func(m string) { warned = append(warned, m) }, wait: 50 * time.Millisecond}
	j.stopProgram(&Process{cmd: cmd, ctrl: w})
	if len(warned) != 1 || !strings.Contains(warned[0], "the sandbox is ended") {
		t.Fatalf("stopProgram returned, saying %q, with thread %d of the program %q: want it not taken for stopped, and the program ended", warned, tid, jobstop.State(p+"/task/"+strconv.Itoa(tid)))
	}
	_, _ = unix.Wait4(tid, &ws, unix.WALL, nil) // the kill ends the traced thread too
	ended = true
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the program ended with %v, want killed", err)
	}
}

// needsComponent skips a test whose component (ptrace of a child, root, the v1
// freezer) this machine lacks, and fails it under CI, where the machine has them and
// a green run must mean the test ran.
func needsComponent(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (CI is set: the test must run)", args...)
	}
	t.Skipf(format, args...)
}

// A program that exits instead of stopping (its command had ended by the freeze,
// container.Freeze) is seen gone: stopProgram says so (false), without a warning or
// a kill, and devsandbox then does not stop itself. A program that stops is seen
// stopped (true).
func TestStopProgramGoneIsNotStopped(t *testing.T) {
	for _, exits := range []bool{true, false} {
		t.Run(fmt.Sprintf("exits=%v", exits), func(t *testing.T) {
			// The program: on the stop byte (JobStop) it exits, or stops itself.
			act := "kill -STOP $$"
			if exits {
				act = "exit 0"
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd := exec.Command("/bin/sh", "-c", "head -c 1 >/dev/null; "+act)
			cmd.Stdin = r
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }() // reaped as Call's Wait does
			defer func() { _ = cmd.Process.Kill(); <-done }()
			var warned []string
			j := &callerJob{warn: func(m string) { warned = append(warned, m) }, wait: 10 * time.Second}
			stopped := j.stopProgram(&Process{cmd: cmd, ctrl: w})
			if warned = withoutNote(warned); stopped == exits || len(warned) != 0 {
				t.Fatalf("stopProgram = %v (warned %q), want %v: the program %s", stopped, warned, !exits, map[bool]string{true: "exited", false: "stopped"}[exits])
			}
		})
	}
}

// A stop that waits (the program waits for the container's init, which waits up to
// jobstop.StopBound for a process in uninterruptible sleep; the engine's pause)
// says what it waits for once it took jobstop.NoteAfter: Ctrl-Z followed by
// seconds without a word reads as a hang. The program here stops itself only once
// the note is said (its second read, on a pipe the warning writes to).
func TestStopProgramSaysWhatASlowStopWaits(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hr, hw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	cmd := exec.Command("/bin/sh", "-c", "head -c 1 >/dev/null; head -c 1 <&3 >/dev/null; kill -STOP $$")
	cmd.Stdin = r
	cmd.ExtraFiles = []*os.File{hr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	hr.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() { _ = cmd.Process.Kill(); <-done }()
	var warned []string
	j := &callerJob{warn: func(m string) {
		warned = append(warned, m)
		_, _ = hw.Write([]byte{1})
	}, wait: 30 * time.Second}
	stopped := j.stopProgram(&Process{cmd: cmd, ctrl: w})
	if want := "devsandbox: " + jobstop.SlowStopNote; !stopped || len(warned) != 1 || warned[0] != want {
		t.Fatalf("a stop that waited: stopProgram = %v, said %q; want the program stopped, after %q", stopped, warned, want)
	}
}

// withoutNote is warned without the slow stop's note (a loaded machine may take
// jobstop.NoteAfter to run a test's program).
func withoutNote(warned []string) []string {
	var out []string
	for _, m := range warned {
		if !strings.HasSuffix(m, jobstop.SlowStopNote) {
			out = append(out, m)
		}
	}
	return out
}
