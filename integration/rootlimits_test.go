//go:build integration

package integration

// Resource limits when devsandbox runs as root on bwrap: the kernel does not apply
// RLIMIT_NPROC to root, so devsandbox enforces limits.pids, limits.memory and
// limits.cpus through a session cgroup it makes itself (cgroup v1 on this machine
// kind), starts the sandbox in it, and removes it after the run, or at the next
// launch after a kill -9. These tests run devsandbox as root (the harness's own
// user) rather than as the test user.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rootCommand prepares devsandbox on bwrap as root in the project, with a home of
// its own in the scratch root (so nothing lands in /root).
func (p *project) rootCommand(ctx context.Context, args ...string) *exec.Cmd {
	p.t.Helper()
	requireRoot(p.t)
	requireBwrap(p.t)
	home := p.path("roothome")
	if _, err := os.Stat(home); os.IsNotExist(err) {
		// A failed test must not leave session cgroups on the machine.
		p.t.Cleanup(func() {
			for _, d := range p.sessionCgroups() {
				_ = os.Remove(d)
			}
		})
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, it.bin, append([]string{"--isolator=bwrap"}, args...)...)
	cmd.Dir = p.dir
	cmd.Env = []string{"HOME=" + home, "USER=root", "LOGNAME=root", hostPath("/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"), "LANG=C.UTF-8", "SHELL=/bin/sh"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// rootSandbox runs `devsandbox --isolator=bwrap [flags] -- sh -c script` as root.
func (p *project) rootSandbox(flags []string, script string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.rootCommand(ctx, append(flags, "--", "/bin/sh", "-c", script)...)
	return runResult(p.t, cmd)
}

// sessionCgroups returns the session cgroups of the project's runs, wherever the
// host's hierarchies are mounted: directories named devsandbox-<project id>-...
func (p *project) sessionCgroups() []string {
	p.t.Helper()
	prefix := "devsandbox-" + strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-") + "-"
	var dirs []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			dirs = append(dirs, path)
			return filepath.SkipDir
		}
		return nil
	})
	return dirs
}

// noSessionCgroups fails the test when a run of the project left a session cgroup.
func (p *project) noSessionCgroups(when string) {
	p.t.Helper()
	if left := p.sessionCgroups(); len(left) > 0 {
		p.t.Errorf("%s, session cgroups are left: %q", when, left)
	}
}

// cgroupFile reads the first of names that exists in one of dirs.
func cgroupFile(t *testing.T, dirs []string, names ...string) string {
	t.Helper()
	for _, n := range names {
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, n)); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
	}
	t.Errorf("none of %q in the session cgroup %q", names, dirs)
	return ""
}

// forkStorm forks subshells that block on a FIFO until the limit refuses one, says
// how many it started and why the next failed, prints HOLD and keeps them until its
// stdin ends. Plain forks, no exec: a fork costs several milliseconds on the test
// machines, and the storm must reach the default limit.
const forkStorm = `mkfifo /tmp/hold
sh -c 'trap "echo storm started \$i" EXIT; i=0; while [ $i -lt 5000 ]; do ( read x </tmp/hold ) & i=$((i+1)); done' 2>/tmp/err
echo "storm refused: $(cat /tmp/err)"
echo HOLD
read x
true`

// TestRootForkStorm: the default process limit (4096 tasks) stops a fork storm in
// a sandbox run as root, counted by the session cgroup's pids controller, while
// processes still start on the host.
func TestRootForkStorm(t *testing.T) {
	p := newProject(t)
	cmd := p.rootCommand(t.Context(), "--egress=none", "--", "/bin/sh", "-c", forkStorm)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	lr, release := started(t, cmd)
	// About 4,000 forks: 15-30 s on the 2-core test machines, more under load.
	line := lr.waitForIn(3*time.Minute, "storm started")
	refusal := lr.waitFor("storm refused")
	lr.waitFor("HOLD")
	dirs := p.sessionCgroups()
	if max := cgroupFile(t, dirs, "pids.max"); max != "4096" {
		t.Errorf("the session cgroup's pids.max is %q, want the default 4096", max)
	}
	if cur, _ := strconv.Atoi(cgroupFile(t, dirs, "pids.current")); cur < 4000 || cur > 4096 {
		t.Errorf("the storm holds %d tasks in the session cgroup, want about the limit (4096)", cur)
	}
	for _, cred := range []*syscall.Credential{nil, {Uid: uint32(it.uid), Gid: uint32(it.gid)}} {
		host := exec.Command("/bin/true")
		host.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := host.Run(); err != nil {
			t.Errorf("a process could not start on the host during the storm (credential %v): %v", cred, err)
		}
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the storm's run: %v\n%s", err, stderr.String())
	}
	var n int
	if _, err := fmt.Sscanf(line, "storm started %d", &n); err != nil {
		t.Fatalf("%q: %v\n%s", line, err, stderr.String())
	}
	if n >= 4096 || n < 4000 || !strings.Contains(refusal, "Cannot fork") {
		t.Errorf("the storm started %d processes (%s), want just under the default limit of 4096, then a refused fork", n, refusal)
	}
	if !strings.Contains(stderr.String(), "devsandbox: the sandbox reached its process limit (limits.pids = 4096): ") {
		t.Errorf("devsandbox did not report the process limit the storm hit:\n%s", stderr.String())
	}
	p.noSessionCgroups("after the run")
	// A run that stays under the limit is not reported.
	if r := p.rootSandbox([]string{"--egress=none", "--pids=64"}, "for i in 1 2 3 4 5 6 7 8; do sleep 0 & done; wait"); r.code != 0 || strings.Contains(r.stderr, "process limit") {
		t.Errorf("a run under its process limit:\n%s", r)
	}
}

// TestRootMemoryHog: --memory as root kills a memory hog in the session cgroup and
// devsandbox says so; the exit status stays the command's (137).
func TestRootMemoryHog(t *testing.T) {
	p := newProject(t)
	probe := p.installProbe()
	r := p.rootSandbox([]string{"--egress=none", "--memory=64m"}, probe+" memhog 512")
	if r.code != 137 || !strings.Contains(r.stderr, "devsandbox: the sandbox ran out of memory (limit 64 MiB)") {
		t.Errorf("want exit 137 and the out-of-memory report:\n%s", r)
	}
	if strings.Contains(r.stdout, "memhog done") || !strings.Contains(r.stdout, "memhog 16") {
		t.Errorf("the hog must start and be stopped:\n%s", r)
	}
	// A command that exits 137 by itself is not reported as out of memory.
	r = p.rootSandbox([]string{"--egress=none", "--memory=64m"}, "kill -9 $$")
	if r.code != 137 || strings.Contains(r.stderr, "out of memory") {
		t.Errorf("a SIGKILL without an out-of-memory kill:\n%s", r)
	}
	p.noSessionCgroups("after the runs")
}

// TestRootLimitsApplied: the memory limit (swap off), the CPU quota and the pids
// limit are in the session cgroup, and the sandbox's processes are in it from the
// start: bwrap itself, the init and the command.
func TestRootLimitsApplied(t *testing.T) {
	p := newProject(t)
	cmd := p.rootCommand(t.Context(), "--egress=none", "--memory=256m", "--cpus=0.5", "--", "/bin/sh", "-c", "echo ready; read x; true")
	lr, release := started(t, cmd)
	lr.waitFor("ready")
	dirs := p.sessionCgroups()
	if len(dirs) == 0 {
		t.Fatal("no session cgroup while the sandbox runs")
	}
	if got := cgroupFile(t, dirs, "pids.max"); got != "4096" {
		t.Errorf("pids.max = %q", got)
	}
	if got := cgroupFile(t, dirs, "memory.max", "memory.limit_in_bytes"); got != "268435456" {
		t.Errorf("memory limit = %q, want 268435456", got)
	}
	if got := cgroupFile(t, dirs, "memory.swap.max", "memory.memsw.limit_in_bytes"); got != "0" && got != "268435456" {
		t.Errorf("swap limit = %q, want none beyond the memory limit", got)
	}
	if got := cgroupFile(t, dirs, "cpu.max", "cpu.cfs_quota_us"); got != "50000 100000" && got != "50000" {
		t.Errorf("CPU quota = %q, want 50000 µs per 100000", got)
	}
	tree := sandboxTree(cmd.Process.Pid)
	if len(tree) < 3 {
		t.Fatalf("found only %d sandboxed processes: %v", len(tree), tree)
	}
	for _, pid := range tree {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		if n := strings.Count(string(b), "/"+filepath.Base(dirs[0])+"\n"); n != len(dirs) {
			t.Errorf("process %d is in %d of the session cgroup's %d directories:\n%s", pid, n, len(dirs), b)
		}
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the run: %v", err)
	}
	p.noSessionCgroups("after the run")
}

// sleepingRootRun starts a run as root that sleeps once it is ready (for a kill -9),
// and returns it with its session cgroup's directories, failing the test when it
// has none.
func (p *project) sleepingRootRun(t *testing.T) (*exec.Cmd, []string) {
	t.Helper()
	cmd := p.rootCommand(t.Context(), "--egress=none", "--", "/bin/sh", "-c", "echo ready; exec sleep 300")
	lr, _ := started(t, cmd)
	lr.waitFor("ready")
	dirs := p.sessionCgroups()
	if len(dirs) == 0 {
		t.Fatal("no session cgroup while the sandbox runs")
	}
	return cmd, dirs
}

// TestRootCgroupSweptAfterKill: a kill -9 of devsandbox leaves its session cgroup
// (nothing runs to remove it); once the sandbox is gone, the next launch removes it.
func TestRootCgroupSweptAfterKill(t *testing.T) {
	p := newProject(t)
	cmd, dirs := p.sleepingRootRun(t)
	killDevsandbox(t, cmd)
	if left := p.sessionCgroups(); len(left) != len(dirs) {
		t.Fatalf("after kill -9 the session cgroups %q should be left for the next launch, found %q", dirs, left)
	}
	if r := p.rootSandbox([]string{"--egress=none"}, "true"); r.code != 0 {
		t.Fatalf("the next launch: %s", r)
	}
	p.noSessionCgroups("after the next launch")
}

// TestRootCgroupPrunedAfterKill: `devsandbox sandboxes prune` removes the session
// cgroup a kill -9 left (--dry-run only names it), without another run.
func TestRootCgroupPrunedAfterKill(t *testing.T) {
	p := newProject(t)
	cmd, dirs := p.sleepingRootRun(t)
	// While the run lives, prune leaves its cgroup alone.
	if out := p.rootPrune(t, "--dry-run"); strings.Contains(out, filepath.Base(dirs[0])) {
		t.Errorf("prune would remove the session cgroup of a live run:\n%s", out)
	}
	killDevsandbox(t, cmd)
	out := p.rootPrune(t, "--dry-run")
	for _, d := range dirs {
		if !strings.Contains(out, "would remove "+d) {
			t.Errorf("prune --dry-run does not name %s:\n%s", d, out)
		}
	}
	if len(p.sessionCgroups()) != len(dirs) {
		t.Fatal("prune --dry-run removed a session cgroup")
	}
	// The sweep needs neither devsandbox-docker nor an engine: a devsandbox installed
	// without it prunes the session cgroups and succeeds.
	alone := filepath.Join(t.TempDir(), "devsandbox")
	copyFile(t, it.bin, alone)
	cmd = p.rootPruneCommand(t, alone)
	b, err := cmd.CombinedOutput()
	out = string(b)
	if err != nil {
		t.Errorf("prune without devsandbox-docker: %v\n%s", err, out)
	}
	if !strings.Contains(out, "devsandbox-docker) is not installed") {
		t.Errorf("prune without devsandbox-docker does not say it is not installed:\n%s", out)
	}
	for _, d := range dirs {
		if !strings.Contains(out, "removed "+d) {
			t.Errorf("prune does not say it removed %s:\n%s", d, out)
		}
	}
	p.noSessionCgroups("after prune")
}

// rootPrune runs `devsandbox sandboxes prune [flags]` as root and returns its
// stdout. The docker engine it is pointed at does not exist, so prune touches no
// container or volume of anyone's on this machine: it fails after sweeping the
// session cgroups, which need no engine.
func (p *project) rootPrune(t *testing.T, flags ...string) string {
	t.Helper()
	cmd := p.rootPruneCommand(t, it.bin, flags...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String() + errb.String()
}

// rootPruneCommand is `bin sandboxes prune [flags]` as root, pointed at a docker
// engine that does not exist.
func (p *project) rootPruneCommand(t *testing.T, bin string, flags ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := p.rootCommand(ctx, append([]string{"--config", p.noPodmanConfig(), "sandboxes", "prune"}, flags...)...)
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.Args = slices.DeleteFunc(cmd.Args, func(a string) bool { return a == "--isolator=bwrap" })
	cmd.Env = append(cmd.Env, "DOCKER_HOST=unix://"+p.path("no-engine.sock"))
	return cmd
}

// killDevsandbox sends SIGKILL to devsandbox (cmd) and waits until every process of
// its sandbox has exited with it, or fails the test after 10 s.
func killDevsandbox(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if errs := kill9Outlived(t, cmd, descendants(cmd.Process.Pid)); len(errs) > 0 {
		t.Fatalf("a sandboxed process outlived devsandbox by 10s: %v", errs[0])
	}
}

// TestRootCgroupFilesystemReadOnly: the cgroup file system is what a sandboxed root
// could lift its limits through. Shown read-only, every attempt fails; a writable
// mount of it is refused before the command runs.
func TestRootCgroupFilesystemReadOnly(t *testing.T) {
	p := newProject(t)
	attack := `for f in /sys/fs/cgroup/*/devsandbox-*/pids.max /sys/fs/cgroup/devsandbox-*/pids.max; do
			[ -e "$f" ] || continue
			echo max > "$f" 2>/dev/null && echo "raised $f"
		done
		for f in /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/cgroup.procs; do
			[ -e "$f" ] || continue
			echo 0 > "$f" 2>/dev/null && echo "moved to $f"
		done
		mkdir /sys/fs/cgroup/pids/escape 2>/dev/null && echo "made a cgroup"
		echo attack done`
	r := p.rootSandbox([]string{"--egress=none", "--mount", "/sys/fs/cgroup:/sys/fs/cgroup:ro"}, attack)
	if r.code != 0 || !strings.Contains(r.stdout, "attack done") {
		t.Fatalf("the run with the cgroup file system read-only: %s", r)
	}
	if strings.TrimSpace(r.stdout) != "attack done" {
		t.Errorf("the sandbox changed its cgroups:\n%s", r.stdout)
	}
	_ = os.Remove("/sys/fs/cgroup/pids/escape")
	for _, m := range []string{"/sys/fs/cgroup", "/sys"} {
		r = p.rootSandbox([]string{"--egress=none", "--mount", m}, attack)
		if r.code != 125 || strings.Contains(r.stdout, "attack done") || !strings.Contains(r.stderr, "the writable mount of "+m) {
			t.Errorf("a writable mount of %s must stop the run before the command:\n%s", m, r)
		}
	}
	_ = os.Remove("/sys/fs/cgroup/pids/escape")
	p.noSessionCgroups("after the runs")
}

// TestRootCgroupEscape: in the default view, a sandboxed root cannot reach its
// session cgroup's files or leave it: it cannot mount a cgroup file system, make a
// cgroup namespace of its own, find a descriptor of a cgroup directory, or see the
// host's cgroup paths; pids.max stays as devsandbox wrote it and every sandboxed
// process stays in the session cgroup.
func TestRootCgroupEscape(t *testing.T) {
	p := newProject(t)
	attack := `mkdir -p /tmp/c1 /tmp/c2 /tmp/c3
		mount -t cgroup -o pids none /tmp/c1 2>/dev/null && echo "mounted cgroup v1"
		mount -t cgroup2 none /tmp/c2 2>/dev/null && echo "mounted cgroup v2"
		mount -t sysfs none /tmp/c3 2>/dev/null && echo "mounted sysfs"
		for f in /tmp/c1/pids.max /tmp/c1/devsandbox-*/pids.max /tmp/c3/fs/cgroup/pids/devsandbox-*/pids.max; do
			[ -e "$f" ] && echo max > "$f" 2>/dev/null && echo "raised $f"
		done
		for f in /tmp/c1/cgroup.procs /tmp/c2/cgroup.procs /tmp/c3/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs; do
			[ -e "$f" ] && echo 0 > "$f" 2>/dev/null && echo "moved to $f"
		done
		unshare -C true 2>/dev/null && echo "made a cgroup namespace"
		unshare -U -r true 2>/dev/null && echo "made a user namespace"
		grep -v ':/$' /proc/self/cgroup | sed 's/^/host path: /'
		[ -e /sys/fs/cgroup ] && echo "sees /sys/fs/cgroup"
		` + fdProbe + `
		echo "attack done"
		read x
		true`
	cmd := p.rootCommand(t.Context(), "--egress=none", "--", "/bin/sh", "-c", attack)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	lr, release := started(t, cmd)
	var report, probed []string
	for line := lr.next(); line != "attack done"; line = lr.next() {
		if line == "" {
			t.Fatalf("the attack ended early:\n%s\n%s", strings.Join(append(report, probed...), "\n"), stderr.String())
		}
		if strings.HasPrefix(line, "fd") {
			probed = append(probed, line)
			continue
		}
		report = append(report, line)
	}
	fds := parseFDProbe(t, strings.Join(probed, "\n"))
	report = append(report, fds.leadingTo(func(target string) bool {
		return strings.Contains(target, "cgroup") || strings.Contains(target, "devsandbox-")
	})...)
	if len(report) > 0 {
		t.Errorf("the sandbox reached its cgroups:\n%s", strings.Join(report, "\n"))
	}
	dirs := p.sessionCgroups()
	if len(dirs) == 0 {
		t.Fatal("no session cgroup while the sandbox runs")
	}
	if got := cgroupFile(t, dirs, "pids.max"); got != "4096" {
		t.Errorf("pids.max = %q after the attack, want 4096", got)
	}
	for _, pid := range sandboxTree(cmd.Process.Pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		if n := strings.Count(string(b), "/"+filepath.Base(dirs[0])+"\n"); n != len(dirs) {
			t.Errorf("after the attack, process %d is in %d of the session cgroup's %d directories:\n%s", pid, n, len(dirs), b)
		}
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the run: %v\n%s", err, stderr.String())
	}
	p.noSessionCgroups("after the run")
}

// copyFile copies the executable src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// sandboxTree is devsandbox's descendants but the guard of bwrap's process group
// (isolator/bwrap groupGuard, argv[0] devsandbox-guard): a shell of devsandbox's own
// on the host, outside the sandbox and its session cgroup, that kills bwrap's group
// if devsandbox dies in bwrap's setup. The limits are the sandbox's, not its.
func sandboxTree(pid int) []int {
	return slices.DeleteFunc(descendants(pid), func(p int) bool { return program(p) == "devsandbox-guard" })
}
