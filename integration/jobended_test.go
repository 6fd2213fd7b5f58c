//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
)

// TestJobControlEndedAtStop: Ctrl-Z that comes as the command has ended is not
// reported as a stopped job (the shell's "Stopped" for a command that is over): a
// native command that exits as Ctrl-Z arrives is reported exited, and devsandbox,
// which stops the sandbox first, finds the command ended and does not stop itself.
// The moment is made to last: once the command said "ready", the test stops the
// sandbox's init (its pid 1; on bwrap once the init has reported the command), then
// lets the command go on (a line through a fifo in the project, which needs no
// init to relay it): the command says "bye" and exits, and stays a zombie its
// stopped init has not reaped while Ctrl-Z comes. The init is continued once
// devsandbox has stopped itself, or half a second after Ctrl-Z (the outcome does
// not depend on that delay: the init's state is the same whenever it comes after
// the stop).
//
// bwrap finds the command ended itself; on docker (the local engine and the stand-in
// remote one, whose containers run on this kernel too) the container's init answers the
// helper's stop so (wire.StopEnded): continued, it finds the command ended once it
// has stopped the rest, or exits first, and the helper then does not stop, nor
// devsandbox, which sees it exit instead. krun runs the same init and its own helper
// (devsandbox-krun); the suite's krun runs a plain container (runtime runc), whose
// init is a process of this host, as docker's (in a microVM it would be the guest's,
// which the test could not stop).
//
// "orphans": the command leaves a process running (`sleep … &`), and on bwrap the
// init has a child older than the command (the publisher of --publish), so the
// init's children alone read the command as running (its report's pidfd of the
// command tells). The run still returns the command's status, and the orphan is
// gone by then: nothing is left running.
func TestJobControlEndedAtStop(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap", localDocker, remoteDocker, "krun"}, func(t *testing.T, iso string) {
		if iso == "krun" {
			// The suite's krun runs a plain container (krun.runtime = "runc",
			// writeConfig): its init, the guest's in a microVM, is a process of
			// this host here, as on docker, and the job-control path (the helper's
			// stop to the init, protocol 2) is krun's own.
			requirePodman(t)
		}
		for _, tc := range []struct {
			name    string
			orphans bool
		}{
			{name: "plain"},
			{name: "orphans", orphans: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var flags []string
				orphan := ""
				if tc.orphans {
					// A number of this run's, to find the orphan by.
					orphan = strconv.Itoa(90000 + int(time.Now().UnixNano()%9000))
					if iso == "bwrap" {
						flags = append(flags, "--publish", strconv.Itoa(freePort(t)))
					}
				}
				endedAtStop(t, iso, flags, orphan)
			})
		}
	})
}

// endedAtStop runs a command on iso with flags that says "ready", reads a line from
// a fifo in the project, says "bye" and exits 7 (with orphan set, it first starts
// `sleep ORPHAN` in the background). Once the command said "ready" it stops the
// sandbox's init, writes the line, waits for the command's zombie and types Ctrl-Z,
// continuing the init after. It wants the command's status, not a stopped job, and,
// when orphan is set, no "sleep ORPHAN" left running after the run.
func endedAtStop(t *testing.T, iso string, flags []string, orphan string) {
	p := newProject(t)
	fifo := filepath.Join(p.dir, "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if it.asOther {
		if err := os.Chown(fifo, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	script := "echo ready; read -r a < " + fifo + "; echo bye; exit 7"
	if orphan != "" {
		script = "sleep " + orphan + " & " + script
	}
	var init, dsb int
	shell := `"$@"; s=$?; echo "status[$s]"; if [ $s = 148 ]; then fg %1 >/dev/null; echo "end[$?]"; fi`
	want := "ready\nbye\nstatus[7]\n"
	args := append([]string{"--isolator=" + iso}, flags...)
	args = append(args, "--", "/bin/sh", "-c", script)
	got := jobControlRun(t, p.dir, shell, []jobStep{
		{after: "ready\n", keys: "\x1a", atSession: func(sid int) {
			if iso == "bwrap" {
				dsb, init = runProcesses(t, sid)
				// The init is stopped once it has reported the command (its
				// report hands devsandbox a pidfd of it): devsandbox knows the
				// command from then on, as in any run past its start.
				waitState(t, func() bool { return holdsPidfd(dsb, init) })
			} else {
				// The container's init: the command runs, so the init reported
				// ready and reads the helper's frames.
				dsb, _ = runProcesses(t, sid, true)
				init = containerInit(t, iso, p)
			}
			if err := syscall.Kill(init, syscall.SIGSTOP); err != nil {
				t.Fatalf("stopping the sandbox's init %d: %v", init, err)
			}
			// kill returns before the stop: a thread of the init still in its
			// wait could reap the command that exits next (the suite's loaded
			// machine saw the command gone, not a zombie). Every thread stopped
			// first.
			waitState(t, func() bool { return procs.Stopped(init) })
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.WriteString("x\n")
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The command exits after its "bye": wait for the zombie its
			// stopped init cannot reap.
			waitState(t, func() bool { return commandZombie(init) })
			go func() {
				deadline := time.Now().Add(500 * time.Millisecond)
				for procs.State(dsb) != "T" && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				_ = syscall.Kill(init, syscall.SIGCONT)
			}()
		}},
	}, want, args...)
	if got != want {
		t.Fatalf("Ctrl-Z as the command had ended: output %q, want %q (the command's exit, not a stopped job)", got, want)
	}
	if orphan != "" {
		if left := procs.WithArgs("sleep", orphan); len(left) > 0 {
			t.Errorf("the command's orphan (sleep %s) is left running after the run: pids %v", orphan, left)
		}
	}
}

// containerInit is the host pid of the init of the project's one sandbox container
// in docker variant iso's engine, or krun's podman (runtime runc: a process of this
// host).
func containerInit(t *testing.T, iso string, p *project) int {
	t.Helper()
	inspect := func(id string) string { return dockerAt(t, iso, "inspect", "--format", "{{.State.Pid}}", id) }
	var ids []string
	if iso == "krun" {
		ids = krunContainers(t, p, false)
		inspect = func(id string) string { return mustPodman(t, "inspect", "--format", "{{.State.Pid}}", id) }
	} else {
		ids = projectContainers(t, iso, p, false)
	}
	if len(ids) != 1 {
		t.Fatalf("the project's sandbox containers: %v, want one", ids)
	}
	pid, err := strconv.Atoi(inspect(ids[0]))
	if err != nil || pid == 0 {
		t.Fatalf("the container's init: pid %d (%v)", pid, err)
	}
	return pid
}

// commandZombie reports whether the init pid has a child that is a zombie (the
// command, beside its orphans).
func commandZombie(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, _ := strconv.Atoi(f); procs.State(c) == "Z" {
				return true
			}
		}
	}
	return false
}

// runProcesses finds, below the shell of session sid, devsandbox and the sandbox's
// init (the process that is pid 1 of its own pid namespace); with noInit, devsandbox
// alone (a container's init is the engine's child).
func runProcesses(t *testing.T, sid int, noInit ...bool) (dsb, init int) {
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
	if dsb == 0 || (init == 0 && len(noInit) == 0) {
		t.Fatalf("devsandbox (%d) or the sandbox's init (%d) not found below the shell %d", dsb, init, sid)
	}
	return dsb, init
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// waitState polls cond, a state of other processes that sends no event, up to 10s.
func waitState(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("the processes did not reach the state in 10s\n" + processDump())
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

// processDump lists, for a failure's message, the processes in a pid namespace of
// their own (sandboxes' inits and commands) and devsandbox's and bwrap's: pid,
// parent, state, NSpid, name and argv.
func processDump() string {
	var b strings.Builder
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st := procs.Status(pid)
		ns := strings.Join(strings.Fields(st["NSpid"]), ",")
		if strings.Contains(ns, ",") || st["Name"] == "devsandbox" || st["Name"] == "bwrap" {
			cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			fmt.Fprintf(&b, "%d ppid=%s %s ns=%s %s %q\n", pid, st["PPid"], strings.Fields(st["State"] + " ?")[0], ns, st["Name"], strings.ReplaceAll(string(cl), "\x00", " "))
		}
	}
	return b.String()
}
