//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/internal/procs"
)

// slowStopNote is what devsandbox says once a stop has waited jobstop.NoteAfter
// (jobstop.SlowStopNote, after its "devsandbox: " prefix; bwrap's adds "warning: ").
const slowStopNote = "stopping the sandbox: waiting for its processes to stop"

// TestJobControlSlowStop: Ctrl-Z while a process of the command is in uninterruptible
// sleep ('D', as a write or rename under way on a slow file system; here a `sleep`
// held by the cgroup v1 freezer). The stop waits for it up to its bound
// (jobstop.StopBound: bwrap's own stop; docker's and krun's container init, within
// the helper's bound for its answer) and says once, meanwhile, what it waits for;
// then the shell reports the job stopped (148) as for any Ctrl-Z. Once the process is
// thawed and the job continued (`fg`), the command reads its line and the run ends
// with the command's status, its `sleep` gone. On every isolator: the suite's krun
// runs a plain container (krun.runtime = "runc"), whose processes are this host's.
// How long such a stop takes is a measurement: `make bench-ctrlz BENCH_DSTATE=1`.
func TestJobControlSlowStop(t *testing.T) {
	requireFreezerV1(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		mark := strconv.Itoa(70000 + int(time.Now().UnixNano()%9000)) // the command's sleep, found by it
		script := `sleep ` + mark + ` & s=$!; echo ready; read -r a; kill $s; echo "cmd[$a]"`
		shell := `"$@"; echo "status[$?]"; fg %1 >/dev/null; echo "end[$?]"`
		want := "ready\nstatus[148]\ncmd[go]\nend[0]\n"
		thaw := func() {}
		got, all := jobControlRunAll(t, p.dir, shell, []jobStep{
			{after: "ready\n", keys: "\x1a", at: func() { thaw = freezeProcess(t, mark) }},
			{after: "status[", keys: "go\n", at: func() { thaw() }},
		}, want, "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if got != want {
			t.Fatalf("Ctrl-Z with a process of the command in 'D': output %q, want %q", got, want)
		}
		if n := strings.Count(all, slowStopNote); n != 1 {
			t.Errorf("Ctrl-Z with a process of the command in 'D' for the whole stop: devsandbox said %q %d times, want once; its whole output: %q", slowStopNote, n, all)
		}
		if left := procs.WithArgs("sleep", mark); len(left) > 0 {
			t.Errorf("the command's sleep is left after the run: %v", left)
		}
	})
}

// freezerV1 is the cgroup v1 freezer hierarchy: a process frozen there is in 'D'
// (cgroup v2's freezer does not put it there).
const freezerV1 = "/sys/fs/cgroup/freezer"

// requireFreezerV1 skips without root and the cgroup v1 freezer hierarchy, and fails
// in CI.
func requireFreezerV1(t *testing.T) {
	t.Helper()
	why := ""
	if os.Getuid() != 0 {
		why = "moving the command's process into a freezer cgroup needs root"
	} else if _, err := os.Stat(filepath.Join(freezerV1, "cgroup.procs")); err != nil {
		why = "no cgroup v1 freezer hierarchy: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("required in CI: %s", why)
	}
	t.Skip(why)
}

// freezeProcess puts the process whose argv is `sleep mark` in a new cgroup of the
// v1 freezer and freezes it ('D'); the returned function thaws it, moves it back to
// the freezer cgroup it came from (a container's: a paused one freezes it again, as
// it would have been), else the root one, and removes the new cgroup (once; at the
// test's end at the latest).
func freezeProcess(t *testing.T, mark string) func() {
	t.Helper()
	var pids []int
	waitState(t, func() bool { pids = procs.WithArgs("sleep", mark); return len(pids) == 1 })
	pid := strconv.Itoa(pids[0])
	back := freezerV1
	cg, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	for _, l := range strings.Split(string(cg), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && f[1] == "freezer" {
			back = filepath.Join(freezerV1, f[2])
		}
	}
	dir, err := os.MkdirTemp(freezerV1, "it-slowstop-")
	if err != nil {
		t.Fatalf("a cgroup of the v1 freezer: %v", err)
	}
	done := false
	thaw := func() {
		if done {
			return
		}
		done = true
		if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0); err != nil {
			t.Errorf("thawing the command's sleep: %v", err)
		}
		if os.WriteFile(filepath.Join(back, "cgroup.procs"), []byte(pid), 0) != nil {
			// Its own cgroup went, or the process did: the root one.
			_ = os.WriteFile(filepath.Join(freezerV1, "cgroup.procs"), []byte(pid), 0)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	}
	t.Cleanup(thaw)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("FROZEN"), 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, func() bool { return procs.State(pids[0]) == "D" })
	return thaw
}
