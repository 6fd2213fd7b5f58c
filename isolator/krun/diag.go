package krun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procgroup"
	"github.com/devsandbox/devsandbox/isolator"
)

// MinPodman is the oldest podman whose API the backend uses (the v5 bindings accept
// servers from 4.0 on; 4.3.1 is tested).
const MinPodman = "4.0"

// Diagnose implements isolator.Diagnoser: one row per host requirement.
func (b *Isolator) Diagnose(ctx context.Context) []isolator.Check {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h := b.hostAccess()
	s := b.Settings
	var rows []isolator.Check
	ok := func(name, detail string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active}, Detail: detail})
	}
	bad := func(name, reason, fix string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}})
	}

	if p, err := exec.LookPath("podman"); err != nil {
		bad("podman", "podman is not installed", "install podman "+MinPodman+" or newer (Debian/Ubuntu: sudo apt-get install podman)")
	} else if err := b.judgePodman(p); err != nil {
		bad("podman", strings.TrimPrefix(err.Error(), isolator.ErrProtection.Error()+": ")+"; doctor did not run it, nor start its service", "the reason says which PATH entry to change")
	} else if out, err := podmanVersion(ctx, p); err == nil {
		ok("podman", fmt.Sprintf("%s (%s)", p, strings.TrimSpace(string(out))))
	} else {
		ok("podman", p)
	}
	rootless := s.UID != 0
	if rootless {
		if _, err := exec.LookPath("newuidmap"); err != nil {
			bad("uidmap", "newuidmap/newgidmap are missing (rootless podman needs them)", "sudo apt-get install uidmap")
		} else {
			ok("uidmap", "newuidmap and newgidmap found")
		}
		for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
			if n := subidCount(f, s.User, s.UID); n > 0 {
				ok(f, fmt.Sprintf("%d ids for %s", n, s.User))
			} else {
				bad(f, "no range for "+s.User, fmt.Sprintf("sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s", s.User))
			}
		}
		dir := s.RuntimeDir
		if dir == "" {
			dir = filepath.Join("/run/user", strconv.Itoa(s.UID))
		}
		name := "runtime dir " + dir
		var st syscall.Stat_t
		switch err := syscall.Stat(dir, &st); {
		case err != nil:
			bad(name, err.Error(), fmt.Sprintf("create it: sudo install -d -m 0700 -o %s %s, and export XDG_RUNTIME_DIR=%s (systemd-logind does this at login)", s.User, dir, dir))
		case int(st.Uid) != s.UID || st.Mode&0o077 != 0:
			bad(name, fmt.Sprintf("owned by uid %d, mode %o", st.Uid, st.Mode&0o7777), fmt.Sprintf("sudo chown %s %s && sudo chmod 0700 %s", s.User, dir, dir))
		case s.RuntimeDir == "":
			bad(name, "XDG_RUNTIME_DIR is unset", "export XDG_RUNTIME_DIR="+dir)
		default:
			ok(name, "owned by you, 0700")
		}
	}
	if s.Runtime == "runc" {
		ok("krun runtime", "krun.runtime = runc: a plain container, no microVM")
	} else if p, err := exec.LookPath(s.Runtime); err != nil {
		bad("krun runtime", fmt.Sprintf("the OCI runtime %q is not on PATH (unless containers.conf [engine.runtimes] names it for podman)", s.Runtime), "install crun built with libkrun and link it as krun (Fedora: dnf install crun-krun), or register it in containers.conf [engine.runtimes]")
	} else {
		ok("krun runtime", p)
	}
	if s.Runtime != "runc" {
		if err := h.KVM(); err != nil {
			bad("/dev/kvm", err.Error(), kvmFix)
		} else {
			ok("/dev/kvm", "opens read-write")
		}
	}
	bin := b.options(nil).Binaries
	var missing []string
	for _, p := range []string{bin.Nsenter, bin.Nft, bin.IP} {
		if unix.Access(p, unix.X_OK) != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		bad("nsenter and nft (egress allowlist)", strings.Join(missing, ", ")+" missing: the egress rules cannot be applied in the container's network namespace",
			"sudo apt-get install nftables util-linux iproute2 (Fedora: sudo dnf install nftables util-linux iproute)")
	} else {
		ok("nsenter and nft (egress allowlist)", fmt.Sprintf("%s, %s and %s, run on the host into the container's namespaces", bin.Nsenter, bin.Nft, bin.IP))
	}
	nofile, nproc := h.HardLimits()
	mgr := "systemd"
	if !h.Systemd() {
		mgr = "cgroupfs (no systemd: devsandbox starts podman's service with --cgroup-manager=cgroupfs)"
	}
	ok("podman limits", fmt.Sprintf("nofile=%d, the host's hard limit (podman's default may exceed it); nproc = limits.pids, at most the host's hard limit %d; cgroup manager %s", nofile, nproc, mgr))

	// The rlimits a run from here asks of the service (limits.pids, this shell's
	// hard limits).
	want := wantedLimits(b.options(h), s.Pids)
	sock, err := b.socket(ctx, h, want)
	var short *limitError
	if errors.As(err, &short) {
		bad("podman service limits", err.Error(), "see the reason: a podman service started under a lower `ulimit -n` or `ulimit -u` than this shell's cannot give a container this shell's limits")
		return rows
	}
	if err != nil {
		bad("podman API socket", err.Error(), "install podman if it is missing, else fix what podman says (a missing runtime: see the krun runtime row); or start `podman system service` yourself and set krun.podman_socket")
		return rows
	}
	e, err := b.connect(ctx, h, want)
	if err != nil {
		bad("podman API socket", err.Error(), "see "+serviceLog(sock))
		return rows
	}
	v, err := e.Version()
	if err != nil {
		bad("podman API socket", err.Error(), "restart the podman service")
		return rows
	}
	ok("podman API socket", fmt.Sprintf("%s (podman %s; %s or newer needed)", sock, v, MinPodman))
	if pid, have, err := h.ServiceLimits(sock); err == nil && pid != 0 {
		// socket stopped a short service it could, or refused: this is the one in use.
		// A run gives the container every other rlimit at the service's own value, so
		// a containers.conf's default_ulimits adds none (Options.Inherited).
		if own, err := h.ServiceRlimits(sock); err != nil || len(own) == 0 {
			bad("podman service limits", fmt.Sprintf("pid %d's hard limits: %s; its other rlimits cannot be read (%v), and a run, which gives the container those, stops", pid, limitsText(have, want), err), "see the reason")
		} else {
			ok("podman service limits", fmt.Sprintf("pid %d's hard limits: %s; the container is given its other %d rlimits at its own values, so a containers.conf's default_ulimits add none", pid, limitsText(have, want), len(own)-len(want)))
		}
	}
	if err := e.ImageExists(s.Image); err != nil {
		bad("krun image", err.Error(), "load or build it (see the reason)")
	} else {
		ok("krun image", s.Image)
	}
	return rows
}

// subidCount returns how many subordinate ids file grants the user (by name or uid).
func subidCount(file, user string, uid int) int {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(parts) != 3 || (parts[0] != user && parts[0] != strconv.Itoa(uid)) {
			continue
		}
		if n, err := strconv.Atoi(parts[2]); err == nil {
			total += n
		}
	}
	return total
}

// podmanVersion is what podman at p says of its version. Rootless podman may
// re-execute itself in its user namespace: the end of ctx kills its process group.
func podmanVersion(ctx context.Context, p string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, p, "--version")
	procgroup.Own(cmd, time.Second)
	return cmd.Output()
}
