package bwrap

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// killHelperVar names the kill point a re-run of the test binary dies at.
const killHelperVar = "DEVSANDBOX_TEST_KILL_AT"

// A kill -9 of devsandbox at each point of a group child's start leaves nothing of
// the group running: devsandbox is a re-run of this test binary, SIGKILLed at the
// point (killPoint); its "bwrap" a shell that first starts a process of its group
// with no parent-death signal (as bwrap's child, waiting for ever for its dead
// parent's go-on) and says so, and is SIGKILLed as devsandbox dies (Pdeathsig, as
// Run starts bwrap). "child started" is right after the start of bwrap, before
// anything else of devsandbox's runs.
func TestKill9AtEachPointLeavesNothing(t *testing.T) {
	if at := os.Getenv(killHelperVar); at != "" {
		kill9Helper(at)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"guard started", "child started"} {
		t.Run(strings.ReplaceAll(at, " ", "_"), func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestKill9AtEachPointLeavesNothing$")
			cmd.Env = append(os.Environ(), killHelperVar+"="+at)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The stand-in child's pid and the group's id, when the helper got that far.
			line, _ := bufio.NewReader(out).ReadString('\n')
			werr := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the helper ended with %v (%q), want killed by SIGKILL at %q", werr, line, at)
			}
			pgid := 0
			if f := strings.Fields(line); len(f) == 2 {
				stand, _ := strconv.Atoi(f[0])
				pgid, _ = strconv.Atoi(f[1])
				if pidfd, err := unix.PidfdOpen(stand, 0); err == nil {
					err = waitExit(pidfd, time.Now().Add(10*time.Second))
					unix.Close(pidfd)
					if err != nil {
						cmdline, _ := os.ReadFile("/proc/" + f[0] + "/cmdline")
						_ = syscall.Kill(stand, syscall.SIGKILL)
						t.Errorf("killed at %q, devsandbox left its child's stand-in %d (%q) running: %v", at, stand, cmdline, err)
					}
				}
			} else if at == "child started" {
				t.Fatalf("the helper's child said %q, want its stand-in's pid and its group", line)
			}
			// The process table: nothing of the group, or of the helper's children,
			// is left but zombies.
			deadline := time.Now().Add(10 * time.Second)
			for {
				left := livingOf(cmd.Process.Pid, pgid)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, p := range left {
						_ = syscall.Kill(p, syscall.SIGKILL)
					}
					t.Fatalf("killed at %q, devsandbox left running (killed now): %v", at, left)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// livingOf lists the processes not zombies whose parent is ppid or whose process
// group is pgid (0: none).
func livingOf(ppid, pgid int) []int {
	var left []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		parent, _ := strconv.Atoi(f[1])
		group, _ := strconv.Atoi(f[2])
		if parent == ppid || (pgid != 0 && group == pgid) {
			left = append(left, pid)
		}
	}
	return left
}

// kill9Helper is the helper's devsandbox: it starts the group's "bwrap" as Run
// does and is SIGKILLed at the kill point at (once, at "child started", the stand-in
// child runs).
func kill9Helper(at string) {
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(2)
	}
	killPoint = func(point string) {
		if point != at {
			return
		}
		if point == "child started" {
			w.Close()
			var b [1]byte
			_, _ = r.Read(b[:]) // the stand-in started
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	stdio := &childStdio{files: [3]*os.File{nil, os.Stdout, os.Stderr}, copies: make(chan error)}
	// The stand-in: a process of the group, no parent-death signal, that outlives
	// its parent; its pid and group on stdout, then one byte to the helper.
	script := `sleep 1000 </dev/null >/dev/null 2>&1 & echo "$! $(cut -d' ' -f5 /proc/$$/stat)"; echo >&3; exec sleep 1000`
	_, _ = startChild("/bin/sh", []string{"sh", "-c", script}, nil, stdio, []*os.File{w}, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL})
	os.Exit(3) // not reached: killed at the point
}
