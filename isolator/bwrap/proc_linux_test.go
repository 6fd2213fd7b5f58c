package bwrap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runChild starts sh -c script with stdout and stderr writing to out (a writer that is
// not a file, so its copy goroutine runs) and returns its status.
func runChild(t *testing.T, script string, out *bytes.Buffer, extra ...*os.File) (syscall.WaitStatus, error) {
	t.Helper()
	stdio, err := newChildStdio(nil, out, out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := startChild("/bin/sh", []string{"sh", "-c", script}, nil, stdio, extra, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.pidfd == nil {
		t.Error("no pidfd: the wait blocks a thread in wait4")
	}
	return c.wait()
}

func TestChildExitStatus(t *testing.T) {
	var out bytes.Buffer
	ws, err := runChild(t, "echo out; echo err >&2; exit 7", &out)
	if err != nil {
		t.Fatal(err)
	}
	if got := exitCode(ws, nil); got != 7 {
		t.Errorf("exit code %d, want 7", got)
	}
	if out.String() != "out\nerr\n" {
		t.Errorf("output %q, want both lines in order", out.String())
	}
}

func TestChildKilledBySignal(t *testing.T) {
	var out bytes.Buffer
	ws, err := runChild(t, "kill -TERM $$", &out)
	if err != nil {
		t.Fatal(err)
	}
	if got := exitCode(ws, nil); got != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d", got, 128+int(syscall.SIGTERM))
	}
}

// An extra descriptor arrives at 3, a nil one is closed, and stdin is /dev/null.
func TestChildDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	ws, err := runChild(t, `echo via3 >&3; { echo x >&4; } 2>/dev/null && echo open4; read -r l || echo eof`, &out, w, nil)
	w.Close()
	if err != nil || exitCode(ws, nil) != 0 {
		t.Fatalf("status %v, %v; output %q", ws, err, out.String())
	}
	buf := make([]byte, 16)
	n, _ := r.Read(buf)
	if string(buf[:n]) != "via3\n" || out.String() != "eof\n" {
		t.Errorf("fd 3 got %q, output %q; want \"via3\\n\" and \"eof\\n\"", buf[:n], out.String())
	}
}

func TestStartChildMissingBinary(t *testing.T) {
	stdio, err := newChildStdio(nil, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startChild("/nonexistent/bwrap", []string{"bwrap"}, nil, stdio, nil, &syscall.SysProcAttr{}); err == nil {
		t.Fatal("started a binary that does not exist")
	}
}

// A child that leads a process group (bwrap) ends with it: what is left of the
// group (bwrap's child in its setup: in bwrap's group until its setsid, with no
// parent-death signal until just before its exec) is killed at the child's exit,
// before the child is reaped, however the child ended. Killed or signalled, the
// wait returns only once that process has exited.
func TestChildExitEndsItsGroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		end   func(c *child)
		await bool // the wait returns only once the group's process has exited
	}{
		{"killed", func(c *child) { c.kill(syscall.SIGKILL) }, true},
		{"signalled", func(c *child) { _ = syscall.Kill(c.pid, syscall.SIGTERM) }, true}, // forward before the command runs
		{"exited", func(c *child) { _ = syscall.Kill(c.pid, syscall.SIGUSR1) }, false},   // bwrap's own exit in its setup (die)
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			stdio, err := newChildStdio(nil, w, w)
			if err != nil {
				t.Fatal(err)
			}
			// The group's other process is a sleep in the background, with no
			// descriptor of the test's; the leader exits 1 on SIGUSR1.
			script := `trap 'exit 1' USR1; sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; while :; do sleep 0.05; done`
			c, err := startChild("/bin/sh", []string{"sh", "-c", script}, nil, stdio, nil, &syscall.SysProcAttr{Setpgid: true})
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(r).ReadString('\n')
			if err != nil {
				c.kill(syscall.SIGKILL)
				t.Fatal(err)
			}
			left, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			pidfd, err := unix.PidfdOpen(left, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(pidfd)
			defer unix.Kill(left, syscall.SIGKILL) // on failure: the pidfd names it still
			tc.end(c)
			if _, err := c.wait(); err != nil {
				t.Fatalf("wait: %v", err)
			}
			err = nil
			if tc.await {
				if n, perr := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 0); perr != nil || n == 0 {
					err = fmt.Errorf("poll: %d, %v", n, perr)
				}
			} else {
				err = waitExit(pidfd, time.Now().Add(5*time.Second)) // killed: it exits soon after
			}
			if err != nil {
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(left) + "/cmdline")
				t.Errorf("the group's process %d (%q) is still running after its leader's wait returned: %v", left, cmdline, err)
			}
		})
	}
}
