//go:build integration

package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJobControlEndedAtStop: Ctrl-Z that comes as the command has ended is not
// reported as a stopped job (the shell's "Stopped" for a command that is over): a
// native command that exits as Ctrl-Z arrives is reported exited, and devsandbox,
// which stops the sandbox first, finds the command ended and does not stop itself.
// The moment is made to last: the test stops the sandbox's init (its pid 1), once
// it has reported the command, before the command's last line, so the command, once it has said "bye", stays a zombie
// its init has not reaped while Ctrl-Z comes; the init is continued once devsandbox
// has stopped itself, or half a second after Ctrl-Z (the outcome does not depend on
// that delay: the init's state is the same whenever it comes after the stop).
// bwrap only: the container isolators stop the command through their init, and
// their helper stops itself as before.
func TestJobControlEndedAtStop(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap"}, func(t *testing.T, iso string) {
		p := newProject(t)
		var init, dsb int
		shell := `"$@"; s=$?; echo "status[$s]"; if [ $s = 148 ]; then fg %1 >/dev/null; echo "end[$?]"; fi`
		want := "ready\nbye\nstatus[7]\n"
		got := jobControlRun(t, p.dir, shell, []jobStep{
			{after: "ready\n", keys: "x\n", atSession: func(sid int) {
				dsb, init = runProcesses(t, sid)
				// The init is stopped once it has reported the command (its
				// report hands devsandbox a pidfd of it): devsandbox knows the
				// command from then on, as in any run past its start.
				waitState(t, func() bool { return holdsPidfd(dsb, init) })
				if err := syscall.Kill(init, syscall.SIGSTOP); err != nil {
					t.Fatalf("stopping the sandbox's init %d: %v", init, err)
				}
			}},
			{after: "bye\n", keys: "\x1a", at: func() {
				// The command exits after its "bye": wait for the zombie its
				// stopped init cannot reap.
				waitState(t, func() bool { return firstChildState(init) == "Z" })
				go func() {
					deadline := time.Now().Add(500 * time.Millisecond)
					for procState(dsb) != "T" && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					_ = syscall.Kill(init, syscall.SIGCONT)
				}()
			}},
		}, want, "--isolator="+iso, "--", "/bin/sh", "-c", "echo ready; read -r a; echo bye; exit 7")
		if got != want {
			t.Fatalf("Ctrl-Z as the command had ended: output %q, want %q (the command's exit, not a stopped job)", got, want)
		}
	})
}

// runProcesses finds, below the shell of session sid, devsandbox and the sandbox's
// init (the process that is pid 1 of its own pid namespace).
func runProcesses(t *testing.T, sid int) (dsb, init int) {
	t.Helper()
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 {
				if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
					parent[pid], _ = strconv.Atoi(f[1])
				}
			}
		}
	}
	below := func(pid, top int) bool {
		for n := 0; pid > 1 && n < 64; n++ {
			if pid = parent[pid]; pid == top {
				return true
			}
		}
		return false
	}
	for pid := range parent {
		if !below(pid, sid) {
			continue
		}
		if parent[pid] == sid && comm(pid) == "devsandbox" {
			dsb = pid
		}
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "NSpid:" && f[len(f)-1] == "1" {
				init = pid
			}
		}
	}
	if dsb == 0 || init == 0 {
		t.Fatalf("devsandbox (%d) or the sandbox's init (%d) not found below the shell %d", dsb, init, sid)
	}
	return dsb, init
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// procState is the state letter of /proc/pid/stat ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 0 {
		return f[0]
	}
	return ""
}

// firstChildState is the state of a child of pid, a child of any of its threads
// ("" without one): the init has one, the command.
func firstChildState(pid int) string {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			return procState(c)
		}
	}
	return ""
}

// waitState polls cond, a state of other processes that sends no event, up to 10s.
func waitState(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("the processes did not reach the state in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// holdsPidfd reports whether process pid holds a pidfd of target (its fdinfo's
// "Pid:" line).
func holdsPidfd(pid, target int) bool {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", pid))
	for _, e := range ents {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "Pid:" && f[1] == strconv.Itoa(target) {
				return true
			}
		}
	}
	return false
}
