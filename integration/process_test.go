//go:build integration

package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Guarantee 7: SIGTERM and SIGINT sent to devsandbox reach the command.
func TestSignalsReachCommand(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c",
				`trap 'echo got-signal; exit 7' TERM INT HUP; echo ready; while :; do sleep 1; done`)
			lr := startLines(t, cmd)
			lr.waitFor("ready")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			lr.waitFor("got-signal")
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 7 {
				t.Errorf("%v: exit %d (%v), want the command's 7", sig, code, err)
			}
		}
	})
}

// Guarantee 7: kill -9 of devsandbox takes the whole sandboxed tree down.
func TestKill9TakesTreeDown(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c",
			`sleep 1000 & sleep 1000 & echo ready; wait`)
		lr := startLines(t, cmd)
		lr.waitFor("ready")
		// The sandboxed tree: under bwrap, devsandbox's descendants; under docker and
		// krun, the processes of the run's container (children of the engine's init).
		tree := descendants(cmd.Process.Pid)
		switch iso {
		case localDocker, remoteDocker:
			ids := projectContainers(t, iso, p, false)
			if len(ids) != 1 {
				t.Fatalf("want the run's container, have %v", ids)
			}
			tree = containerPids(t, iso, ids[0])
		case "krun":
			ids := krunContainers(t, p, false)
			if len(ids) != 1 {
				t.Fatalf("want the run's container, have %v", ids)
			}
			tree = krunContainerPids(t, ids[0])
		}
		if len(tree) < 3 {
			t.Fatalf("found only %d sandboxed processes: %v", len(tree), tree)
		}
		for _, err := range kill9Outlived(t, cmd, tree) {
			t.Errorf("a sandboxed process outlived devsandbox by 10s: %v", err)
		}
	})
}

// pidfdExited waits until the process behind pidfd fd has exited, or deadline
// passes. A signal interrupting the wait (the Go runtime's own preemption signals
// do) is not an answer: the wait goes on.
func pidfdExited(fd int, deadline time.Time) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, int(max(time.Until(deadline).Milliseconds(), 0)))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n != 1:
			return errors.New("still running at the deadline")
		}
		return nil
	}
}

// descendants returns the pids of every descendant of pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		self, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		children[ppid] = append(children[ppid], self)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, k := range children[c] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// Guarantee 7: an interactive run gets a pty: the shell has job control (its process
// group owns the terminal) despite bwrap's --new-session, Ctrl-C interrupts, and
// window resizes reach the command.
func TestInteractivePty(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		master, slave, err := tty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
			t.Fatal(err)
		}
		cmd := command(t.Context(), p.dir, baseEnv("TERM=xterm"), "--isolator="+iso, "--", "/bin/sh", "-c", `
			read _ _ _ _ pgrp _ _ tpgid _ < /proc/self/stat
			[ "$pgrp" = "$tpgid" ] && echo "jobctl:ok" || echo "jobctl:bad $pgrp $tpgid"
			echo "size:$(stty size)"
			trap 'echo "resized:$(stty size)"' WINCH
			echo ready
			while :; do sleep 0.1; done`)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		lr := newLineReader(t, master)
		if got := lr.waitFor("jobctl:"); got != "jobctl:ok" {
			t.Errorf("job control: %s", got)
		}
		if got := lr.waitFor("size:"); got != "size:30 100" {
			t.Errorf("initial size: %s", got)
		}
		lr.waitFor("ready")
		// Resize the outer terminal: the kernel sends SIGWINCH to devsandbox (the
		// foreground process group of the outer pty), which resizes the inner one.
		if err := tty.SetSize(master.Fd(), tty.Size{Rows: 40, Cols: 120}); err != nil {
			t.Fatal(err)
		}
		if got := lr.waitFor("resized:"); got != "resized:40 120" {
			t.Errorf("after resize: %s", got)
		}
		if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("Ctrl-C: exit %d, want 130", code)
		}
	})
}
