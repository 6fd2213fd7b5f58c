//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCtrlZLatency is a measurement, not a check: the time from Ctrl-Z typed on the
// shell's terminal to the shell's report that the run stopped (its status 148,
// read on the shell's output), over DEVSANDBOX_IT_CTRLZ_RUNS runs on each isolator
// (skipped without it). With DEVSANDBOX_IT_CTRLZ_DSTATE=1 a process of the command
// (a `sleep`) is held in uninterruptible sleep ('D', the cgroup v1 freezer) across
// the stop, as a write or rename under way on a slow file system would be: the stop
// waits for it up to its bound (jobstop.StopBound), and the test reads what
// devsandbox said meanwhile. Every run is continued (`fg`) and must end with the
// command's status, nothing left stopped. Run it under the bench lock
// (docs/performance.md).
func TestCtrlZLatency(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("DEVSANDBOX_IT_CTRLZ_RUNS"))
	if runs <= 0 {
		t.Skip("a measurement: set DEVSANDBOX_IT_CTRLZ_RUNS=N to run it")
	}
	dstate := os.Getenv("DEVSANDBOX_IT_CTRLZ_DSTATE") == "1"
	forEachIsolator(t, func(t *testing.T, iso string) {
		if iso == "krun" {
			requirePodman(t)
		}
		p := newProject(t)
		var took []time.Duration
		var notes []string
		for i := 0; i < runs; i++ {
			mark := strconv.Itoa(80000 + int(time.Now().UnixNano()%9000))
			script := `sleep ` + mark + ` & s=$!; echo ready; read -r a; kill $s; echo "cmd[$a]"`
			shell := `"$@"; echo "status[$?]"; fg %1 >/dev/null; echo "end[$?]"`
			want := "ready\nstatus[148]\ncmd[go]\nend[0]\n"
			var t0, t1 time.Time
			var thaw func()
			got, all := jobControlRunAll(t, p.dir, shell, []jobStep{
				{after: "ready\n", keys: "\x1a", at: func() {
					if dstate {
						thaw = freezeProcess(t, mark)
					}
					t0 = time.Now()
				}},
				{after: "status[", keys: "go\n", at: func() {
					t1 = time.Now()
					if thaw != nil {
						thaw()
					}
				}},
			}, want, "--isolator="+iso, "--", "/bin/sh", "-c", script)
			if thaw != nil {
				thaw()
			}
			if got != want {
				t.Fatalf("run %d: output %q, want %q", i, got, want)
			}
			took = append(took, t1.Sub(t0))
			for _, l := range strings.Split(all, "\n") {
				if strings.HasPrefix(l, "devsandbox: ") && !slices.Contains(notes, l) {
					notes = append(notes, l)
				}
			}
			if left := processesWithArgs("sleep", mark); len(left) > 0 {
				t.Errorf("run %d: the command's sleep is left after the run: %v", i, left)
			}
		}
		slices.Sort(took)
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("Ctrl-Z to Stopped on %s, %d runs (D-state %v): median %v, min %v, max %v; loadavg %s; devsandbox said %q",
			iso, runs, dstate, took[len(took)/2].Round(100*time.Microsecond), took[0].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond), strings.TrimSpace(string(load)), notes)
	})
}

// freezeProcess puts the process whose argv is `sleep mark` in a cgroup of the v1
// freezer and freezes it ('D'); the returned function thaws it and removes the
// cgroup (once).
func freezeProcess(t *testing.T, mark string) func() {
	t.Helper()
	var pids []int
	waitState(t, func() bool { pids = processesWithArgs("sleep", mark); return len(pids) == 1 })
	dir, err := os.MkdirTemp("/sys/fs/cgroup/freezer", "ctrlz-latency-")
	if err != nil {
		t.Fatalf("a cgroup of the v1 freezer (root, cgroup v1 freezer hierarchy): %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pids[0])), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("FROZEN"), 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, func() bool { return procState(pids[0]) == "D" })
	done := false
	return func() {
		if done {
			return
		}
		done = true
		_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0)
		// The process leaves the cgroup for the root one before it is removed.
		_ = os.WriteFile("/sys/fs/cgroup/freezer/cgroup.procs", []byte(strconv.Itoa(pids[0])), 0)
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	}
}
