package cgroup

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// joinEnv makes the test binary the join step: it joins the cgroup.procs files the
// variable lists and execs the rest of its arguments.
const joinEnv = "DEVSANDBOX_CGROUP_TEST_JOIN"

func TestMain(m *testing.M) {
	if files := os.Getenv(joinEnv); files != "" {
		if err := Join(strings.Split(files, ":")); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(125)
		}
		argv := os.Args[slices.Index(os.Args, "--")+1:]
		err := unix.Exec(argv[0], argv, os.Environ())
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(126)
	}
	os.Exit(m.Run())
}

// requireRootCgroups skips unless the test runs as root, and fails in CI, which runs
// as root on a machine with cgroups.
func requireRootCgroups(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs the cgroup tests as root")
		}
		t.Skip("making cgroups needs root here")
	}
}

// joined starts the test binary as the join step into s, execing argv.
func joined(t *testing.T, s *Session, argv ...string) *exec.Cmd {
	t.Helper()
	var procs []string
	for _, d := range s.Dirs() {
		procs = append(procs, filepath.Join(d, "cgroup.procs"))
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, argv...)...)
	cmd.Env = append(os.Environ(), joinEnv+"="+strings.Join(procs, ":"))
	return cmd
}

// TestHostSession makes a session cgroup on this host's real hierarchies, starts a
// process in it through the join step, and removes it while the process still runs.
func TestHostSession(t *testing.T) {
	requireRootCgroups(t)
	l := Probe(OnHost())
	hs, err := l.For(Pids, Memory)
	if err != nil {
		t.Fatalf("root cannot make a session cgroup here: %v", err)
	}
	s, err := Create(hs, "test", Limits{Pids: 16, Memory: 64 << 20}, l.Swap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Remove() })

	out, err := joined(t, s, "/bin/cat", "/proc/self/cgroup").CombinedOutput()
	if err != nil {
		t.Fatalf("join step: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "/"+s.Name+"\n"); n != len(s.Dirs()) {
		t.Errorf("the joined process is in %d of the session cgroup's directories %q:\n%s", n, s.Dirs(), out)
	}
	if got := read(t, s.Dirs()[0], "pids.max"); strings.TrimSpace(got) != "16" {
		t.Errorf("pids.max = %q", got)
	}

	sleeper := joined(t, s, "/bin/sh", "-c", "echo in; exec sleep 60")
	stdout, err := sleeper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "in\n" {
		t.Fatalf("the join step did not run the program: %q %v", line, err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	// Remove kills what is left; the rmdir succeeds once the kernel reaped it.
	if err := s.Remove(); err != nil {
		t.Fatalf("Remove with a process inside: %v", err)
	}
	if err := <-done; err == nil || sleeper.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the process left in the session cgroup ended with %v, want SIGKILL", err)
	}
	for _, d := range s.Dirs() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", d, err)
		}
	}
}

// TestHostCloneInto starts a process directly in a session cgroup of this host's
// cgroup v2 hierarchy (CLONE_INTO_CGROUP), as Run does on cgroup v2. It needs no
// controller, so the empty v2 hierarchy of a cgroup v1 host serves.
func TestHostCloneInto(t *testing.T) {
	requireRootCgroups(t)
	self, _ := os.ReadFile("/proc/self/cgroup")
	info, _ := os.ReadFile("/proc/self/mountinfo")
	_, path, ok := parseSelf(self)
	var dir string
	for _, m := range parseMountinfo(info) {
		if m.v2 && ok {
			dir, _ = within(m, path)
		}
	}
	if dir == "" {
		t.Skip("no cgroup v2 hierarchy here")
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.type")); err == nil {
		t.Skipf("%s is not the v2 hierarchy's root: a child would need its processes moved", dir)
	}
	s, err := Create([]Hierarchy{{V2: true, Parent: dir}}, "test", Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Remove() })
	fd, ok := s.CloneFD()
	if !ok {
		t.Fatal("no descriptor to clone into")
	}
	cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "0::"+filepath.Join(path, s.Name)+"\n") {
		t.Errorf("the cloned process is not in %s:\n%s", s.Dirs()[0], out)
	}
}
