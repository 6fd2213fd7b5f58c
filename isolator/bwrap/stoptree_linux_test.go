package bwrap

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
)

// The test binary plays a sandbox's process when asked: the first of a pid
// namespace of its own (multi-threaded, as any Go program), it says ready and waits
// for its stdin to end.
// With BWRAP_TEST_CHILD=stopped it first starts a child in a process group of its
// own and stops it (SIGSTOP), as a command's shell stops a job of its own, and waits
// until it is stopped.
func init() {
	if os.Getenv("BWRAP_TEST") == "nsidle" {
		if os.Getenv("BWRAP_TEST_CHILD") == "reaped" {
			// A child the kernel reaps as it dies (its parent ignores SIGCHLD): a
			// process of the sandbox that another one kills while devsandbox has
			// the sandbox stopped leaves its pid free for any process.
			signal.Ignore(syscall.SIGCHLD)
			c := exec.Command("/bin/sh", "-c", "while :; do :; done")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				fmt.Println("starting the child:", err)
				os.Exit(1)
			}
		}
		if os.Getenv("BWRAP_TEST_CHILD") == "stopped" {
			c := exec.Command("/bin/sh", "-c", "while :; do :; done")
			// Out of bwrap's process group, as the sandbox's processes are
			// (--new-session); the group is continued whole.
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				fmt.Println("starting the child:", err)
				os.Exit(1)
			}
			_ = c.Process.Signal(syscall.SIGSTOP)
			var ws syscall.WaitStatus // this /proc is not the namespace's: wait for the stop
			if _, err := syscall.Wait4(c.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
				fmt.Println("the child did not stop:", err)
				os.Exit(1)
			}
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadByte()
		os.Exit(0)
	}
}

// startInPidNamespace starts the test binary as the first process of a new user and
// pid namespace, in a process group of its own, and returns its pid once it is ready.
func startInPidNamespace(t *testing.T, env ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{"BWRAP_TEST=nsidle"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:     true,
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("starting a process in a pid namespace of its own: %v", err)
		}
		t.Skipf("no user and pid namespace here: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		stdin.Close()
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the sandbox's process said %q (%v)", line, err)
	}
	return cmd.Process.Pid
}

// stopTree returns once every process of the sandbox's pid namespace is seen
// stopped, each thread of it, not as soon as it has sent the stops: only then does
// devsandbox stop and give the terminal back to the shell. Stopped and continued 200
// times: the threads of the sandbox's process wake and stop on the other CPU.
func TestStopTreeReturnsOnceStopped(t *testing.T) {
	pid := startInPidNamespace(t)
	j := &jobControl{bwrapPid: pid, bwrapPgid: pid, cmdPid: pid}
	for i := range 200 {
		if err := j.stopTree(); err != nil {
			t.Fatalf("stop %d: stopTree = %v, want nil", i, err)
		}
		if st := jobstop.GroupState(strconv.Itoa(pid)); st != 'T' {
			t.Fatalf("stop %d: stopTree returned with a thread of the sandbox's process %q, want every thread stopped ('T')", i, st)
		}
		j.resume()
	}
}

// The resume continues what the stop stopped, and only that: a job the command's own
// shell had stopped before the stop (here the sandbox's first process's child,
// stopped by it) is still stopped after it; the first process runs again.
func TestResumeLeavesStoppedJobStopped(t *testing.T) {
	pid := startInPidNamespace(t, "BWRAP_TEST_CHILD=stopped")
	p := strconv.Itoa(pid)
	kids, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("the sandbox's first process's children: %q (%v), want one", kids, err)
	}
	child := strings.Fields(string(kids))[0]
	t.Cleanup(func() {
		if n, err := strconv.Atoi(child); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	})
	j := &jobControl{bwrapPid: pid, bwrapPgid: pid, cmdPid: pid}
	for i := range 3 {
		if err := j.stopTree(); err != nil {
			t.Fatalf("stop %d: stopTree = %v, want nil", i, err)
		}
		j.resume()
		if st := jobstop.State(child); st != 'T' {
			t.Fatalf("resume %d continued the job stopped before the stop (state %q), want it stopped ('T')", i, st)
		}
		if st := jobstop.GroupState(p); st == 'T' {
			t.Fatalf("resume %d left the sandbox's first process stopped", i)
		}
	}
}

// The resume continues processes of the sandbox only. A process the stop stopped
// that dies before the resume (another process of the sandbox kills it while the
// stop pass runs; its parent ignores SIGCHLD, so nothing waits for it) frees its
// pid, which the host then gives to a process of its own: here one the user had
// stopped (a job of another shell, or another sandbox's process that devsandbox
// keeps stopped, where it could read the terminal). fg must not continue it.
func TestResumeSkipsReusedPid(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving a process a chosen pid (ns_last_pid) needs root")
	}
	pid := startInPidNamespace(t, "BWRAP_TEST_CHILD=reaped")
	p := strconv.Itoa(pid)
	kids, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("the sandbox's first process's children: %q (%v), want one", kids, err)
	}
	child, _ := strconv.Atoi(strings.Fields(string(kids))[0])
	j := &jobControl{bwrapPid: pid, bwrapPgid: pid, cmdPid: pid}
	if err := j.stopTree(); err != nil {
		t.Fatalf("stopTree = %v, want nil", err)
	}
	if st := jobstop.State(strconv.Itoa(child)); st != 'T' {
		t.Fatalf("the sandbox's child is in state %q after the stop, want stopped ('T')", st)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The kernel reaps it as it dies (its parent ignores SIGCHLD): no zombie holds the pid.
	for deadline := time.Now().Add(10 * time.Second); jobstop.State(strconv.Itoa(child)) != 'X'; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the killed child %d is still there (state %q)", child, jobstop.State(strconv.Itoa(child)))
		}
	}
	host := startAtPid(t, child)
	if err := host.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(host.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the host's process did not stop: %v", err)
	}
	j.resume()
	if st := jobstop.State(strconv.Itoa(child)); st != 'T' {
		t.Fatalf("resume continued the host's process that took the pid %d of a sandbox's process the stop had stopped (state %q), want it still stopped ('T')", child, st)
	}
}

// startAtPid starts a host process (sleep) with pid want, through ns_last_pid; other
// processes of the machine may take it first, so it tries again, and skips the test
// when it never gets it.
func startAtPid(t *testing.T, want int) *exec.Cmd {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(want-1)), 0); err != nil {
			t.Skipf("setting ns_last_pid: %v", err)
		}
		c := exec.Command("/bin/sleep", "1000")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if c.Process.Pid == want {
			t.Cleanup(func() {
				_ = c.Process.Kill()
				_ = c.Wait()
			})
			return c
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	t.Skipf("another process of the machine took pid %d each time", want)
	return nil
}
