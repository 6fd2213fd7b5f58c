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
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// The systemd user scope: the run is placed in a transient scope of the user's
// systemd manager (systemd-run --user --scope), which needs cgroup v2 with the
// controllers of the limits delegated to the manager.

// scopeName names the session's systemd scope.
func scopeName(p *isolator.Plan) string {
	sess := p.Tmp.Session
	if sess == "" {
		sess = "<session>"
	}
	return "devsandbox-" + p.Project.ID + "-" + sess + ".scope"
}

// scopePrefix runs the rest in a transient scope of the user's systemd manager with
// the limits e puts there (systemd-run execs it: same process, same descriptors).
// Swap is off, so a memory hog is killed rather than swapped out.
func scopePrefix(p *isolator.Plan, e enforcement, unit string) []string {
	a := []string{"systemd-run", "--user", "--scope", "--quiet", "--unit=" + unit}
	if e.pids == byScope {
		a = append(a, "-p", fmt.Sprintf("TasksMax=%d", p.Limits.Pids))
	}
	if e.memory == byScope {
		a = append(a, "-p", fmt.Sprintf("MemoryMax=%d", p.Limits.Memory), "-p", "MemorySwapMax=0")
	}
	if e.cpus == byScope {
		a = append(a, "-p", "CPUQuota="+strconv.FormatFloat(p.Limits.CPUs*100, 'f', -1, 64)+"%")
	}
	return append(a, "--")
}

// scopeHost is where the scope check looks (a value for its tests).
type scopeHost struct {
	root       string // /sys/fs/cgroup
	runtimeDir string // $XDG_RUNTIME_DIR
	uid        int
	lookPath   func(string) (string, error)
	statfsType func(string) (int64, error)
}

func hostScope(p *isolator.Plan) scopeHost {
	return scopeHost{
		root: "/sys/fs/cgroup", runtimeDir: p.HostEnv["XDG_RUNTIME_DIR"], uid: p.User.UID,
		lookPath: exec.LookPath,
		statfsType: func(path string) (int64, error) {
			var st unix.Statfs_t
			err := unix.Statfs(path, &st)
			return st.Type, err
		},
	}
}

// errNoScope is wrapped by the reasons a systemd user scope cannot be made.
var errNoScope = errors.New("no systemd user manager with delegated cgroups")

// check says why a scope with limits of the controllers want cannot be made, or nil.
func (c scopeHost) check(want ...string) error {
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

// scopeOOM reports whether the session's scope ended because the kernel's
// out-of-memory killer killed a process in it, and removes the failed unit. It
// starts systemctl, so it runs only after a command killed by SIGKILL; a systemctl
// on PATH that a sandbox could have written (isolator.HostProgram) is not run, and
// the answer is then no. Its environment is devsandbox's own, as systemd-run's
// scope was made with.
func scopeOOM(p *isolator.Plan, unit string) bool {
	systemctl, err := exec.LookPath("systemctl")
	if err != nil || isolator.HostProgram(p, "systemctl", systemctl) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// systemctl asks the user manager over its socket and starts no child: killing
	// it alone ends it.
	out, err := exec.CommandContext(ctx, systemctl, "--user", "show", "--property=Result", "--value", unit).Output()
	_ = exec.CommandContext(ctx, systemctl, "--user", "reset-failed", unit).Run()
	return err == nil && string(bytes.TrimSpace(out)) == "oom-kill"
}

// scopeEnv is the environment systemd-run starts with, on the host, and passes on
// to bwrap (wire.ScopeEnv): the command's env with every variable that steers
// systemd-run renamed (XDG_RUNTIME_DIR, the D-Bus addresses, SYSTEMD_*), and
// devsandbox's own XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS (host, the Plan's
// HostEnv) in their place; the bwrap init gives the command its own back.
func scopeEnv(env []string, host map[string]string) []string { return wire.ScopeEnv(env, host) }

// scopeStartEnv is the environment a run's prefix starting with systemd-run gets
// (scopeEnv). Without the init (library use), which alone names the command's
// variables back, a command variable that would steer systemd-run is refused
// unless it is devsandbox's own value.
func scopeStartEnv(p *isolator.Plan, env []string) ([]string, error) {
	if initBinary(p) != "" {
		return scopeEnv(env, p.HostEnv), nil
	}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if wire.ScopeVar(name) && p.HostEnv[name] != value {
			return nil, fmt.Errorf("%w: the variable %s would steer systemd-run, which places the run in a scope for its limits on the host; without devsandbox-init (Plan.Self) it cannot be given to systemd-run as devsandbox's own and to the command as the plan's, so set Plan.Self or leave %s out of Plan.Env", isolator.ErrProtection, name, name)
		}
	}
	return env, nil
}
