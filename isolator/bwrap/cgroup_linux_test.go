package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
)

func TestPlacement(t *testing.T) {
	p := &isolator.Plan{Limits: isolator.Limits{Pids: 64, Memory: 256 << 20, CPUs: 1.5}}
	e := enforcement{pids: byCgroup, memory: byCgroup, cpus: byScope}
	v2 := []cgroup.Hierarchy{{V2: true, Parent: "/sys/fs/cgroup/ci.slice", Caps: cgroup.Limits{Pids: 4915}}}
	c := placement(p, e, v2, "devsandbox-x-1", true)
	if c.Join || len(c.Dirs) != 1 || c.Dirs[0] != "/sys/fs/cgroup/ci.slice/devsandbox-x-1" {
		t.Errorf("one v2 directory on a kernel with CLONE_INTO_CGROUP: %+v", c)
	}
	want := []string{"pids.max 64", "memory 256 MiB (268435456 bytes), swap off", "at most the limits of the cgroup devsandbox runs in (pids 4915, memory 0 bytes, CPUs 0; 0 is none)"}
	if strings.Join(c.Limits, "|") != strings.Join(want, "|") {
		t.Errorf("limits %q, want %q (the CPU limit is the scope's)", c.Limits, want)
	}
	if c := placement(p, e, v2, "n", false); !c.Join {
		t.Error("a kernel without CLONE_INTO_CGROUP needs the join step")
	}
	v1 := []cgroup.Hierarchy{{Parent: "/sys/fs/cgroup/pids"}, {Parent: "/sys/fs/cgroup/memory"}}
	if c := placement(p, e, v1, "n", true); !c.Join || len(c.Dirs) != 2 {
		t.Errorf("cgroup v1: %+v", c)
	}
	if _, err := joinPrefix(&isolator.Plan{}, c); err == nil {
		t.Error("the join step without the init")
	}
}

// TestStartInCloned starts a process as Run starts bwrap (its own process group,
// Pdeathsig) in a session cgroup of this host's cgroup v2 hierarchy, cloned into it.
func TestStartInCloned(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs the cgroup tests as root")
		}
		t.Skip("making cgroups needs root here")
	}
	var dir string
	for _, d := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.subtree_control")); err == nil {
			dir = d
			break
		}
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	if dir == "" || !strings.Contains(string(self), "\n0::/\n") && !strings.HasPrefix(string(self), "0::/\n") {
		t.Skip("devsandbox's tests do not run in the root of a cgroup v2 hierarchy here")
	}
	s, err := cgroup.Create([]cgroup.Hierarchy{{V2: true, Parent: dir}}, "test", cgroup.Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startIn(cmd.Args, cmd.SysProcAttr, &Cgroup{Dirs: s.Dirs()}, s); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "0::/"+s.Name+"\n") {
		t.Errorf("not started in %s:\n%s", s.Dirs()[0], out)
	}
}
