package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// Resource limits under bwrap. limits.pids is RLIMIT_NPROC, set by the init inside
// the sandbox's own user namespace, where the kernel counts only the sandbox's tasks
// (since Linux 5.14, which counts RLIMIT_NPROC per user namespace; before, it counts
// all of the user's tasks on the host). limits.memory and limits.cpus need cgroups:
// the run is placed in a systemd scope of the user's manager (systemd-run --user
// --scope), which needs cgroup v2 with the memory and cpu controllers delegated to it.

// minPidsKernel is the first Linux release counting RLIMIT_NPROC per user namespace.
var minPidsKernel = [2]int{5, 14}

// checkPids reports why limits.pids cannot be enforced here, or nil.
func checkPids(p *isolator.Plan) error {
	if p.Limits.Pids <= 0 {
		return nil
	}
	if p.User.UID == 0 {
		return fmt.Errorf("%w: limits.pids (%d) cannot be enforced for root under bwrap: the kernel does not apply RLIMIT_NPROC to root; run devsandbox as a normal user, use --isolator=docker, or set limits.pids = 0 (--pids=0) to run without a process limit", isolator.ErrProtection, p.Limits.Pids)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("%w: limits.pids: reading the kernel version: %w", isolator.ErrProtection, err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	if !kernelAtLeast(release, minPidsKernel) {
		return fmt.Errorf("%w: limits.pids (%d) needs Linux %d.%d or later under bwrap, which counts a sandbox's tasks in its own user namespace; this kernel is %s. Use --isolator=docker, or set limits.pids = 0 (--pids=0) to run without a process limit", isolator.ErrProtection, p.Limits.Pids, minPidsKernel[0], minPidsKernel[1], release)
	}
	return nil
}

// kernelAtLeast reports whether a release such as "6.1.0-13-amd64" is min or later.
func kernelAtLeast(release string, min [2]int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}

// scopeName names the session's systemd scope.
func scopeName(p *isolator.Plan) string {
	sess := p.Tmp.Session
	if sess == "" {
		sess = "<session>"
	}
	return "devsandbox-" + p.Project.ID + "-" + sess + ".scope"
}

// scopePrefix runs the rest in a transient scope of the user's systemd manager with
// the memory and CPU limits (systemd-run execs it: same process, same descriptors).
// Swap is off, so a memory hog is killed rather than swapped out.
func scopePrefix(p *isolator.Plan, unit string) []string {
	a := []string{"systemd-run", "--user", "--scope", "--quiet", "--unit=" + unit}
	if p.Limits.Memory > 0 {
		a = append(a, "-p", fmt.Sprintf("MemoryMax=%d", p.Limits.Memory), "-p", "MemorySwapMax=0")
	}
	if p.Limits.CPUs > 0 {
		a = append(a, "-p", "CPUQuota="+strconv.FormatFloat(p.Limits.CPUs*100, 'f', -1, 64)+"%")
	}
	return append(a, "--")
}

// cgroupFS is where Run looks for cgroups (a field of the checks for their tests).
type cgroupFS struct {
	root       string // /sys/fs/cgroup
	runtimeDir string // $XDG_RUNTIME_DIR
	uid        int
	lookPath   func(string) (string, error)
	statfsType func(string) (int64, error)
}

func hostCgroups(p *isolator.Plan) cgroupFS {
	return cgroupFS{
		root: "/sys/fs/cgroup", runtimeDir: p.HostEnv["XDG_RUNTIME_DIR"], uid: p.User.UID,
		lookPath: exec.LookPath,
		statfsType: func(path string) (int64, error) {
			var st unix.Statfs_t
			err := unix.Statfs(path, &st)
			return st.Type, err
		},
	}
}

// errNoScope is wrapped by the reasons limits.memory and limits.cpus cannot be
// enforced under bwrap.
var errNoScope = errors.New("no systemd user manager with delegated cgroups")

// check reports why a scope with the limits of p cannot be made, or nil.
func (c cgroupFS) check(p *isolator.Plan) error {
	var want []string
	if p.Limits.Memory > 0 {
		want = append(want, "memory")
	}
	if p.Limits.CPUs > 0 {
		want = append(want, "cpu")
	}
	if len(want) == 0 {
		return nil
	}
	if t, err := c.statfsType(c.root); err != nil || t != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("%w: %s is not cgroup v2 (this host has cgroup v1 or a hybrid hierarchy)", errNoScope, c.root)
	}
	if c.runtimeDir == "" {
		return fmt.Errorf("%w: XDG_RUNTIME_DIR is not set, so there is no user manager to ask", errNoScope)
	}
	if _, err := os.Stat(filepath.Join(c.runtimeDir, "systemd", "private")); err != nil {
		return fmt.Errorf("%w: no systemd user manager is running (no %s)", errNoScope, filepath.Join(c.runtimeDir, "systemd", "private"))
	}
	if _, err := c.lookPath("systemd-run"); err != nil {
		return fmt.Errorf("%w: systemd-run is not on PATH", errNoScope)
	}
	mgr := filepath.Join(c.root, "user.slice", fmt.Sprintf("user-%d.slice", c.uid), fmt.Sprintf("user@%d.service", c.uid), "cgroup.controllers")
	b, err := os.ReadFile(mgr)
	if err != nil {
		return fmt.Errorf("%w: reading %s: %w", errNoScope, mgr, err)
	}
	have := strings.Fields(string(b))
	for _, w := range want {
		if !slices.Contains(have, w) {
			return fmt.Errorf("%w: the %s controller is not delegated to the user manager (%s lists %q)", errNoScope, w, mgr, have)
		}
	}
	return nil
}

// limitsError explains limits.memory or limits.cpus that cannot be enforced.
func limitsError(p *isolator.Plan, why error) error {
	var keys []string
	if p.Limits.Memory > 0 {
		keys = append(keys, "limits.memory (--memory)")
	}
	if p.Limits.CPUs > 0 {
		keys = append(keys, "limits.cpus (--cpus)")
	}
	return fmt.Errorf("%w: %s cannot be enforced under bwrap: %w; the command did not run. They need cgroup v2 and a systemd user manager with the memory and cpu controllers delegated (systemd-run --user --scope); run without them, or use --isolator=docker. `devsandbox doctor` shows what this host has", isolator.ErrProtection, strings.Join(keys, " and "), why)
}

// scopeOOM reports whether the session's scope ended because the kernel's
// out-of-memory killer killed a process in it, and removes the failed unit. It
// starts systemctl, so it runs only after a command killed by SIGKILL.
func scopeOOM(unit string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "--user", "show", "--property=Result", "--value", unit).Output()
	_ = exec.CommandContext(ctx, "systemctl", "--user", "reset-failed", unit).Run()
	return err == nil && string(bytes.TrimSpace(out)) == "oom-kill"
}
