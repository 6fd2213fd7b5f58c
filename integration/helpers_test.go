//go:build integration

package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Helpers several test files share: the scaffolds they repeated.

// inNetns returns what open makes on a thread that joined the network namespace ns
// (/run/netns/ns): a socket made there stays in ns when the thread leaves it. The
// thread goes back to its own namespace before it is unlocked; if it cannot, it stays
// locked and the runtime ends it with the goroutine. It must not simply stay locked:
// a goroutine that exits locked to the main thread (which the runtime cannot end)
// leaves that thread, the thread-group leader whose namespace /proc/self/net shows,
// in ns for the rest of the suite (TestEngineSocketSwappedAfterCheck then saw this
// machine's dockerd "in another network namespace", once in CI).
func inNetns[T any](ns string, open func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer own.Close()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		v, err := open()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{v, err}
	}()
	r := <-done
	return r.v, r.err
}

// startReady starts cmd, a sandboxed command whose first line is "ready" once it is
// set up and which then reads its stdin to the end, and returns when that line came;
// another first line fails the test, with devsandbox's stderr. stderr collects it
// meanwhile. stop closes stdin and waits for cmd: the command ends as a user ends it.
// Callers defer stop.
func startReady(t *testing.T, cmd *exec.Cmd) (stderr *strings.Builder, stop func()) {
	t.Helper()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { stdin.Close(); _ = cmd.Wait() }
	if l := newLineReader(t, stdout).next(); l != "ready" {
		stop()
		t.Fatalf("the sandboxed command did not start (first line %q):\n%s", l, stderr.String())
	}
	return stderr, stop
}

// pidNamespaceMembers lists the processes in the pid namespace of process pid (a
// container's init: the container's processes, exec'd ones included), as this
// machine's /proc shows them.
func pidNamespaceMembers(pid int) []int {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil
	}
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/ns/pid"); err == nil && l == ns {
			if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// kill9Outlived sends SIGKILL to devsandbox (cmd) and reaps it, then waits up to 10 s
// for each process of pids (sandboxed ones, listed before the kill; each is held by a
// pidfd opened first, so a reused pid cannot stand in for it, and one already gone
// counts as ended). It returns one error per process still alive then.
func kill9Outlived(t *testing.T, cmd *exec.Cmd, pids []int) []error {
	t.Helper()
	var fds []int
	for _, pid := range pids {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	var errs []error
	for _, fd := range fds {
		if err := pidfdExited(fd, deadline); err != nil {
			errs = append(errs, fmt.Errorf("pidfd %d: %w", fd, err))
		}
		unix.Close(fd)
	}
	return errs
}

// runResult runs cmd to its end and returns its output and exit status; a cmd that
// could not run (or was not waited for) fails the test.
func runResult(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return result{out.String(), errb.String(), ee.ExitCode()}
	case err != nil:
		t.Fatalf("running %q: %v", cmd.Args, err)
	}
	return result{out.String(), errb.String(), 0}
}

// needOrSkip skips a test whose component (a compiler, a tool) is missing on a
// laptop, and fails it when CI is set: the test setup installs every component, so
// a green CI means the test ran.
func needOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
