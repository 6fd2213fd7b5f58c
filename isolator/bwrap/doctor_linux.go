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
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
	"github.com/devsandbox/devsandbox/isolator/landlock"
	"github.com/devsandbox/devsandbox/isolator/tty"
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
	if bin, err := b.path(); err != nil {
		add("bwrap", false, "", "bwrap is not installed", installHint)
	} else if err := b.judge("bubblewrap", bin); err != nil {
		add("bwrap", false, bin, refusal(err), "the reason says which PATH entry to change; doctor did not run it")
	} else {
		st := b.Check(ctx)
		bin, ver := bwrapVersion(ctx, b)
		detail := bin
		if ver != "" {
			detail += " (" + ver + ")"
		}
		lines, read, err := readMountTable()
		var perMount time.Duration
		if err == nil && readsTable(ver) && st.State == isolator.Active {
			perMount, _ = mountCost(ctx, bin)
		}
		rows = append(rows, isolator.Check{Name: "bwrap", Status: st, Detail: detail}, setupLinksRow(ver), mountTableRow(ver, lines, read, err, b.launchReads(), perMount))
	}
	pasta, err := exec.LookPath("pasta")
	bins := b.binaries()
	var planted error
	if err == nil {
		planted = b.judge("pasta", bins.Pasta)
	}
	if planted != nil {
		add("pasta (egress allowlist)", false, pasta, refusal(planted),
			"the reason says which PATH entry to change; doctor did not run it")
	} else {
		add("pasta (egress allowlist)", err == nil, pasta, "pasta is not installed",
			"install passt (Debian/Ubuntu: sudo apt-get install passt; Fedora: sudo dnf install passt)")
	}
	tunErr := unix.Access("/dev/net/tun", unix.R_OK|unix.W_OK)
	add("/dev/net/tun (egress allowlist)", tunErr == nil, "", "pasta cannot open /dev/net/tun: "+errText(tunErr),
		"load the tun module (sudo modprobe tun) and make /dev/net/tun usable by your user (mode 0666 is the distribution default)")
	rows = append(rows, abstractScopeRow(landlock.ABI()), ptyRow(openPty()))
	fwErr := fmt.Errorf("not probed: the pasta at %s was not run", bins.Pasta)
	if planted == nil {
		fwErr = egress.Probe(ctx, egress.SampleRules, bins)
	}
	add("firewall in a user namespace (egress allowlist)", fwErr == nil, "nft, else iptables", errText(fwErr),
		"install nftables (sudo apt-get install nftables) and make sure the nf_tables modules load (sudo modprobe nf_tables)")
	return append(rows, b.limitRows()...)
}

// openPty allocates a pseudo-terminal pair as a run does (tty.Open) and closes it.
func openPty() error {
	m, s, err := tty.Open()
	if err != nil {
		return err
	}
	s.Close()
	return m.Close()
}

// ptyRow says whether a run can have a pty of its own here (err: openPty's): an
// interactive run's, and the one each of stdout and stderr that is a terminal gets
// in a run that is not interactive. Without one such a run stops (125). Pure.
func ptyRow(err error) isolator.Check {
	const name = "pseudo-terminals (/dev/ptmx)"
	if err != nil {
		return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Unavailable,
			Reason: "devsandbox cannot allocate a pseudo-terminal (" + err.Error() + "): a run whose stdin and stdout, or whose stdout or stderr alone, is your terminal stops before the command starts (a run that is not interactive exits 125); runs with every stream a file or a pipe are not affected",
			Fix:    "make /dev/ptmx usable (a devpts mount with ptmxmode=0666 at /dev/pts, and /dev/ptmx its ptmx, as the distributions set up), or redirect the output of runs to a file or a pipe"}}
	}
	return isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active},
		Detail: "a run whose output is your terminal gets a pty of its own, filtered on its way to yours"}
}

// limitRows say whether the syscall policy and each resource limit can be enforced
// here, and how: each limit alone, as Run would choose.
func (b *Isolator) limitRows() []isolator.Check {
	row := func(name string, err error, detail, fix string) isolator.Check {
		st := isolator.Status{State: isolator.Active}
		if err != nil {
			st = isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: fix}
		}
		return isolator.Check{Name: name, Status: st, Detail: detail}
	}
	_, archErr := syscalls.Native()
	rows := []isolator.Check{row("syscall policy (seccomp)", archErr, "bwrap --seccomp, devsandbox-init as pid 1 (bwrap 0.8.0 or later)", "use --isolator=docker")}
	p := &isolator.Plan{User: isolator.User{UID: os.Getuid()}, HostEnv: map[string]string{"XDG_RUNTIME_DIR": b.RuntimeDir}}
	h, layout := probeLimits(p)
	cgroupFix := "run devsandbox as root or in a delegated cgroup v2 subtree, or boot with cgroup v2 under a systemd user session, or use --isolator=docker"
	for _, r := range []struct {
		name string
		l    isolator.Limits
		fix  string
	}{
		{"process limit (limits.pids)", isolator.Limits{Pids: 4096}, "run devsandbox as a normal user on Linux 5.14 or later, or " + cgroupFix + "; or set limits.pids = 0"},
		{"memory limit (limits.memory)", isolator.Limits{Memory: 1 << 30}, cgroupFix + "; without it --memory stops the run"},
		{"CPU limit (limits.cpus)", isolator.Limits{CPUs: 1}, cgroupFix + "; without it --cpus stops the run"},
	} {
		e, err := chooseLimits(r.l, h)
		detail := ""
		var le *limitError
		switch {
		case err == nil:
			detail = describe(e, h, layout)
		case errors.As(err, &le):
			err = errors.New(le.Reason())
		}
		rows = append(rows, row(r.name, err, detail, r.fix))
	}
	return rows
}

// describe says how e enforces its one limit.
func describe(e enforcement, h limitHost, layout func() *cgroup.Layout) string {
	switch {
	case e.pids == byRlimit:
		d := "RLIMIT_NPROC in the sandbox's user namespace (Linux " + kernelRelease() + ")"
		if h.cgroup(cgroup.Pids) == nil {
			d += "; pids.max in the session cgroup when --memory or --cpus make one"
		}
		return d
	case e.uses(byScope):
		return "a systemd user scope (systemd-run --user --scope)"
	case e.uses(byCgroup):
		hs, err := layout().For(e.controllers(byCgroup)...)
		if err != nil || len(hs) == 0 {
			return "a session cgroup"
		}
		v := "v1"
		if hs[0].V2 {
			v = "v2"
		}
		return fmt.Sprintf("a session cgroup devsandbox makes in %s (cgroup %s)", hs[0].Parent, v)
	}
	return ""
}

type nsState struct {
	ok                  bool
	detail, reason, fix string
}

// nsFacts are what doctor probes about user namespaces on this host: the kernel's
// support, the sysctls that switch them off or restrict them ("" when the kernel has
// no such file), and whether a program could start in a new one.
type nsFacts struct {
	kernel           bool   // /proc/self/ns/user exists (CONFIG_USER_NS)
	maxUserNS        string // user.max_user_namespaces
	unprivClone      string // kernel.unprivileged_userns_clone (Debian's patch)
	apparmorRestrict string // kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10 and later)
	probe            error  // starting /bin/true in a new user namespace
}

// userNamespaces probes this host's user namespaces and diagnoses them.
func userNamespaces() nsState {
	_, err := os.Stat("/proc/self/ns/user")
	return diagnoseNamespaces(nsFacts{
		kernel:           err == nil,
		maxUserNS:        readSys("/proc/sys/user/max_user_namespaces"),
		unprivClone:      readSys("/proc/sys/kernel/unprivileged_userns_clone"),
		apparmorRestrict: readSys("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
		probe:            probeUserNamespace(),
	})
}

// diagnoseNamespaces tells a working setup from a kernel without user namespaces, one
// where they are switched off, and Ubuntu's AppArmor restriction, from the probed facts
// alone.
func diagnoseNamespaces(f nsFacts) nsState {
	if !f.kernel {
		return nsState{reason: "the kernel has no user namespaces (CONFIG_USER_NS)", fix: "use a kernel with user namespaces, or --isolator=docker"}
	}
	if f.maxUserNS == "0" {
		return nsState{reason: "user.max_user_namespaces is 0", fix: "sudo sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d)"}
	}
	if f.unprivClone == "0" {
		return nsState{reason: "kernel.unprivileged_userns_clone is 0", fix: "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d)"}
	}
	restricted := f.apparmorRestrict == "1"
	switch {
	case f.probe == nil && restricted:
		return nsState{ok: true, detail: "available (AppArmor restricts them for unconfined programs; bwrap needs its own profile, see docs/security-model.md)"}
	case f.probe == nil:
		return nsState{ok: true, detail: "available"}
	case restricted:
		return nsState{reason: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 24.04)",
			fix: "add an AppArmor profile allowing userns for /usr/bin/bwrap (docs/security-model.md shows one), then sudo apparmor_parser -r /etc/apparmor.d/bwrap"}
	}
	return nsState{reason: "creating a user namespace failed: " + f.probe.Error(), fix: "check the kernel's user-namespace settings and any LSM policy"}
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

// bwrapVersion returns the bwrap binary and what its --version says ("" when it
// says nothing).
func bwrapVersion(ctx context.Context, b *Isolator) (bin, version string) {
	bin, err := b.path()
	if err != nil {
		return "", ""
	}
	// bwrap --version prints and exits, with no child: killing it alone ends it.
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return bin, ""
	}
	return bin, strings.TrimSpace(string(out))
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
	got, ok := parseVersion(v)
	return !ok || !versionLess(got, min)
}

// parseVersion reads the version in bwrap's --version ("bubblewrap 0.8.0", "0.11.0",
// "bubblewrap 0.12"); ok is false when there is none.
func parseVersion(v string) (got [3]int, ok bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return got, false
	}
	n, _ := fmt.Sscanf(f[len(f)-1], "%d.%d.%d", &got[0], &got[1], &got[2])
	return got, n >= 2
}

// versionLess reports whether a is older than b.
func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// judge refuses a program doctor (or Check) would run on the host that a sandbox
// could have planted: against the plan a run from here would get (hostProgram), or,
// without one (a configuration that did not load), when the user may write it.
func (b *Isolator) judge(what, bin string) error {
	if b.Planned != nil {
		return isolator.HostProgram(b.Planned, what, bin)
	}
	if at := isolator.UserWritable(bin); at != "" {
		return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies where you can write (%s), and with no configuration loaded doctor cannot tell whether a sandbox can: a sandboxed program could have put it there", isolator.ErrProtection, what, bin, at)
	}
	return nil
}

// refusal is a judge's error as a doctor row's reason.
func refusal(err error) string {
	return strings.TrimPrefix(err.Error(), isolator.ErrProtection.Error()+": ")
}
