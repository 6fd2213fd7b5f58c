package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/syscalls"
)

// Diagnose implements isolator.Diagnoser: one row per host requirement of the bwrap
// backend and its egress modes, each with a fix when it fails.
func (b *Isolator) Diagnose(ctx context.Context) []isolator.Check {
	var rows []isolator.Check
	add := func(name string, ok bool, detail, reason, fix string) {
		st := isolator.Status{State: isolator.Active}
		if !ok {
			st = isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}
		}
		rows = append(rows, isolator.Check{Name: name, Status: st, Detail: detail})
	}
	add("platform", runtime.GOOS == "linux", runtime.GOOS+"/"+runtime.GOARCH,
		"bwrap needs Linux", "use --isolator=docker")
	us := userNamespaces()
	add("user namespaces", us.ok, us.detail, us.reason, us.fix)
	if _, err := b.path(); err != nil {
		add("bwrap", false, "", "bwrap is not installed", installHint)
	} else {
		st := b.Check(ctx)
		rows = append(rows, isolator.Check{Name: "bwrap", Status: st, Detail: bwrapVersion(ctx, b)})
	}
	pasta, err := exec.LookPath("pasta")
	add("pasta (egress allowlist)", err == nil, pasta, "pasta is not installed",
		"install passt (Debian/Ubuntu: sudo apt-get install passt; Fedora: sudo dnf install passt)")
	tunErr := unix.Access("/dev/net/tun", unix.R_OK|unix.W_OK)
	add("/dev/net/tun (egress allowlist)", tunErr == nil, "", "pasta cannot open /dev/net/tun: "+errText(tunErr),
		"load the tun module (sudo modprobe tun) and make /dev/net/tun usable by your user (mode 0666 is the distribution default)")
	fwErr := egress.Probe(ctx, egress.SampleRules, b.binaries())
	add("firewall in a user namespace (egress allowlist)", fwErr == nil, "nft, else iptables", errText(fwErr),
		"install nftables (sudo apt-get install nftables) and make sure the nf_tables modules load (sudo modprobe nf_tables)")
	return append(rows, b.limitRows()...)
}

// limitRows say whether the syscall policy and each resource limit can be enforced.
func (b *Isolator) limitRows() []isolator.Check {
	row := func(name string, err error, detail, fix string) isolator.Check {
		st := isolator.Status{State: isolator.Active}
		if err != nil {
			st = isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: fix}
		}
		return isolator.Check{Name: name, Status: st, Detail: detail}
	}
	_, archErr := syscalls.Native()
	p := &isolator.Plan{User: isolator.User{UID: os.Getuid()}, Limits: isolator.Limits{Pids: 1}}
	pidsErr := checkPids(p)
	var u unix.Utsname
	_ = unix.Uname(&u)
	p.Limits = isolator.Limits{Memory: 1 << 30, CPUs: 1}
	p.HostEnv = map[string]string{"XDG_RUNTIME_DIR": b.RuntimeDir}
	cgErr := hostCgroups(p).check(p)
	return []isolator.Check{
		row("syscall policy (seccomp)", archErr, "bwrap --seccomp, devsandbox-init as pid 1 (bwrap 0.8.0 or later)", "use --isolator=docker"),
		row("process limit (limits.pids)", pidsErr, "RLIMIT_NPROC in the sandbox's user namespace (Linux "+unix.ByteSliceToString(u.Release[:])+")",
			"use Linux 5.14 or later, or --isolator=docker, or set limits.pids = 0"),
		row("memory and CPU limits (limits.memory, limits.cpus)", cgErr, "a systemd user scope (cgroup v2)",
			"boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) under a systemd user session, or use --isolator=docker; without them --memory and --cpus stop the run"),
	}
}

type nsState struct {
	ok                  bool
	detail, reason, fix string
}

// userNamespaces tells a working setup from a kernel without user namespaces, one where
// they are switched off, and Ubuntu's AppArmor restriction.
func userNamespaces() nsState {
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return nsState{reason: "the kernel has no user namespaces (CONFIG_USER_NS)", fix: "use a kernel with user namespaces, or --isolator=docker"}
	}
	if v := readSys("/proc/sys/user/max_user_namespaces"); v == "0" {
		return nsState{reason: "user.max_user_namespaces is 0", fix: "sudo sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d)"}
	}
	if v := readSys("/proc/sys/kernel/unprivileged_userns_clone"); v == "0" {
		return nsState{reason: "kernel.unprivileged_userns_clone is 0", fix: "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d)"}
	}
	err := probeUserNamespace()
	restricted := readSys("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1"
	switch {
	case err == nil && restricted:
		return nsState{ok: true, detail: "available (AppArmor restricts them for unconfined programs; bwrap needs its own profile, see docs/security-model.md)"}
	case err == nil:
		return nsState{ok: true, detail: "available"}
	case restricted:
		return nsState{reason: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 24.04)",
			fix: "add an AppArmor profile allowing userns for /usr/bin/bwrap (docs/security-model.md shows one), then sudo apparmor_parser -r /etc/apparmor.d/bwrap"}
	}
	return nsState{reason: "creating a user namespace failed: " + err.Error(), fix: "check the kernel's user-namespace settings and any LSM policy"}
}

// probeUserNamespace starts /bin/true in a new user namespace.
func probeUserNamespace() error {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	return cmd.Run()
}

func readSys(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func bwrapVersion(ctx context.Context, b *Isolator) string {
	bin, err := b.path()
	if err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return bin
	}
	return bin + " (" + strings.TrimSpace(string(out)) + ")"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// minBwrap is the oldest bubblewrap with --as-pid-1 and --disable-userns.
var minBwrap = [3]int{0, 8, 0}

// versionAtLeast reads "bubblewrap 0.8.0" and compares it with min; an unreadable
// version passes (the launch itself then says what is wrong).
func versionAtLeast(v string, min [3]int) bool {
	f := strings.Fields(v)
	if len(f) == 0 {
		return true
	}
	var got [3]int
	if n, _ := fmt.Sscanf(f[len(f)-1], "%d.%d.%d", &got[0], &got[1], &got[2]); n < 2 {
		return true
	}
	for i := range got {
		if got[i] != min[i] {
			return got[i] > min[i]
		}
	}
	return true
}
