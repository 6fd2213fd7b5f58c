package bwrap

import (
	"errors"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestDiagnoseNamespaces: doctor's "user namespaces" row for each host state, from the
// probed facts alone. Ubuntu 24.04 (kernel.apparmor_restrict_unprivileged_userns = 1)
// gets the AppArmor reason and the profile fix when a user namespace cannot be made,
// and a working row that names the restriction when it can; a sysctl that switches
// user namespaces off is named before AppArmor is.
func TestDiagnoseNamespaces(t *testing.T) {
	denied := errors.New("fork/exec /bin/true: permission denied")
	const (
		apparmorDetail = "available (AppArmor restricts them for unconfined programs; bwrap needs its own profile, see docs/security-model.md)"
		apparmorReason = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 24.04)"
		apparmorFix    = "add an AppArmor profile allowing userns for /usr/bin/bwrap (docs/security-model.md shows one), then sudo apparmor_parser -r /etc/apparmor.d/bwrap"
	)
	for _, tc := range []struct {
		name  string
		facts nsFacts
		want  nsState
	}{
		{"working, no AppArmor", nsFacts{kernel: true, maxUserNS: "63000"},
			nsState{ok: true, detail: "available"}},
		{"working, AppArmor restriction off", nsFacts{kernel: true, maxUserNS: "63000", apparmorRestrict: "0"},
			nsState{ok: true, detail: "available"}},
		{"Ubuntu 24.04, user namespace made", nsFacts{kernel: true, maxUserNS: "63000", apparmorRestrict: "1"},
			nsState{ok: true, detail: apparmorDetail}},
		{"Ubuntu 24.04, user namespace refused", nsFacts{kernel: true, maxUserNS: "63000", apparmorRestrict: "1", probe: denied},
			nsState{reason: apparmorReason, fix: apparmorFix}},
		{"refused without AppArmor", nsFacts{kernel: true, maxUserNS: "63000", apparmorRestrict: "0", probe: denied},
			nsState{reason: "creating a user namespace failed: fork/exec /bin/true: permission denied", fix: "check the kernel's user-namespace settings and any LSM policy"}},
		{"max_user_namespaces 0 before AppArmor", nsFacts{kernel: true, maxUserNS: "0", apparmorRestrict: "1", probe: denied},
			nsState{reason: "user.max_user_namespaces is 0", fix: "sudo sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d)"}},
		{"Debian's unprivileged_userns_clone 0 before AppArmor", nsFacts{kernel: true, maxUserNS: "63000", unprivClone: "0", apparmorRestrict: "1", probe: denied},
			nsState{reason: "kernel.unprivileged_userns_clone is 0", fix: "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d)"}},
		{"unprivileged_userns_clone 1", nsFacts{kernel: true, maxUserNS: "63000", unprivClone: "1"},
			nsState{ok: true, detail: "available"}},
		{"no CONFIG_USER_NS", nsFacts{probe: denied},
			nsState{reason: "the kernel has no user namespaces (CONFIG_USER_NS)", fix: "use a kernel with user namespaces, or --isolator=docker"}},
	} {
		if got := diagnoseNamespaces(tc.facts); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestSandboxFailure: the "bwrap" row when the trial sandbox fails. bubblewrap's
// message on Ubuntu 24.04 without a profile ("setting up uid map: Permission denied")
// and newer bubblewrap's "No permissions to create a new namespace" get the AppArmor
// fix; a /proc failure and anything else get theirs.
func TestSandboxFailure(t *testing.T) {
	const userns = "unprivileged user namespaces are disabled or restricted: on Ubuntu 24.04 allow them for bwrap with an AppArmor profile (see docs/security-model.md), elsewhere set the sysctl kernel.unprivileged_userns_clone=1 (and user.max_user_namespaces > 0)"
	exit1 := errors.New("exit status 1")
	for _, tc := range []struct {
		out  string
		err  error
		want isolator.Status
	}{
		{"bwrap: setting up uid map: Permission denied\n", exit1,
			isolator.Status{State: isolator.Unavailable, Reason: "bwrap cannot create a sandbox: bwrap: setting up uid map: Permission denied", Fix: userns}},
		{"bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.\nOn e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.\n", exit1,
			isolator.Status{State: isolator.Unavailable, Reason: "bwrap cannot create a sandbox: bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.", Fix: userns}},
		{"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n", exit1,
			isolator.Status{State: isolator.Unavailable, Reason: "bwrap cannot create a sandbox: bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
				Fix: "mounting /proc failed: this is usually a container without its own pid namespace privileges; run devsandbox on the host or use --isolator=docker"}},
		{"", errors.New("signal: killed"),
			isolator.Status{State: isolator.Unavailable, Reason: "bwrap cannot create a sandbox: signal: killed", Fix: "run `bwrap --unshare-all --ro-bind / / true` to see the full error"}},
	} {
		if got := sandboxFailure(tc.out, tc.err); got != tc.want {
			t.Errorf("sandboxFailure(%q):\n got %+v\nwant %+v", tc.out, got, tc.want)
		}
	}
}

// Doctor's pty row: a run here can have a pty of its own (this host has a usable
// /dev/ptmx), and when one cannot be allocated the row fails, naming the error, what
// stops and the fix.
func TestPtyRow(t *testing.T) {
	if err := openPty(); err != nil {
		t.Fatalf("allocating a pty here: %v", err)
	}
	if r := ptyRow(nil); r.State != isolator.Active || !strings.Contains(r.Detail, "a pty of its own") {
		t.Errorf("ptyRow(nil) = %+v", r)
	}
	r := ptyRow(errors.New("opening /dev/ptmx: permission denied"))
	if r.State != isolator.Unavailable {
		t.Fatalf("ptyRow(an error) = %+v, want Unavailable", r)
	}
	for _, w := range []string{"(opening /dev/ptmx: permission denied)", "stops before the command starts", "exits 125"} {
		if !strings.Contains(r.Reason, w) {
			t.Errorf("reason %q; want it to say %q", r.Reason, w)
		}
	}
	if !strings.Contains(r.Fix, "redirect the output") || !strings.Contains(r.Fix, "/dev/ptmx usable") {
		t.Errorf("fix %q", r.Fix)
	}
}
