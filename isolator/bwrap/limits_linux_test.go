package bwrap

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
)

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"5.14.0": true, "5.13.19-generic": false, "6.1.0-13-amd64": true, "4.18.0-513.el8.x86_64": false,
		"5.15.0-91-generic": true, "6.18.44-fc-v1045": true, "5": false, "x.y": false, "5.14-rc1": true,
	} {
		if got := kernelAtLeast(release, minPidsKernel); got != want {
			t.Errorf("kernelAtLeast(%q) = %v, want %v", release, got, want)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"bubblewrap 0.8.0": true, "bubblewrap 0.6.1": false, "bubblewrap 0.11.0": true, "bubblewrap 0.7.9": false,
		"bubblewrap 1.0": true, "odd": true, "": true,
	} {
		if got := versionAtLeast(v, minBwrap); got != want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}

// fakeHost is a host for chooseLimits: who runs devsandbox, whether the kernel
// counts RLIMIT_NPROC per user namespace, and the controllers a session cgroup and a
// systemd user scope could hold (nil: none can be made).
type fakeHost struct {
	root      bool
	oldKernel bool
	cgroup    []string
	scope     []string
}

func (f fakeHost) limitHost() limitHost {
	can := func(what string, have []string) func(...string) error {
		return func(ctrls ...string) error {
			if have == nil {
				return fmt.Errorf("no %s here", what)
			}
			for _, c := range ctrls {
				if !slices.Contains(have, c) {
					return fmt.Errorf("no %s controller for the %s", c, what)
				}
			}
			return nil
		}
	}
	h := limitHost{root: f.root, cgroup: can("cgroup", f.cgroup), scope: can("scope", f.scope)}
	if f.oldKernel {
		h.nproc = nprocErr("5.10.0-28-amd64")
	}
	return h
}

func TestChooseLimits(t *testing.T) {
	all := []string{cgroup.Pids, cgroup.Memory, cgroup.CPU}
	var (
		pids    = isolator.Limits{Pids: 4096}
		pidsMem = isolator.Limits{Pids: 4096, Memory: 256 << 20}
		memCPU  = isolator.Limits{Memory: 256 << 20, CPUs: 1.5}
		every   = isolator.Limits{Pids: 64, Memory: 64 << 20, CPUs: 0.5}
		cpus    = isolator.Limits{CPUs: 2}
	)
	user := fakeHost{}
	for _, tc := range []struct {
		name   string
		host   fakeHost
		limits isolator.Limits
		want   enforcement
		err    string // a word of the error; "" when the limits can be enforced
	}{
		{"no limits", fakeHost{root: true}, isolator.Limits{}, enforcement{}, ""},
		{"user: RLIMIT_NPROC, as before", user, pids, enforcement{pids: byRlimit}, ""},
		{"user with a delegated cgroup: still RLIMIT_NPROC for pids alone", fakeHost{cgroup: all}, pids, enforcement{pids: byRlimit}, ""},
		{"user, old kernel: the cgroup", fakeHost{oldKernel: true, cgroup: all}, pids, enforcement{pids: byCgroup}, ""},
		{"user, old kernel, scope with pids: TasksMax", fakeHost{oldKernel: true, scope: all}, pids, enforcement{pids: byScope}, ""},
		{"user, old kernel, nothing", fakeHost{oldKernel: true}, pids, enforcement{}, "Linux 5.14"},
		{"user, memory, no cgroup or scope", user, pidsMem, enforcement{}, "limits.memory (--memory)"},
		{"user, memory and cpus by scope, pids by RLIMIT_NPROC", fakeHost{scope: all, cgroup: all}, every, enforcement{pids: byRlimit, memory: byScope, cpus: byScope}, ""},
		{"user, memory by cgroup takes pids with it", fakeHost{cgroup: all}, every, enforcement{pids: byCgroup, memory: byCgroup, cpus: byCgroup}, ""},
		{"user, cgroup without pids: RLIMIT_NPROC", fakeHost{cgroup: []string{cgroup.Memory}}, pidsMem, enforcement{pids: byRlimit, memory: byCgroup}, ""},
		{"user, scope without cpu, cgroup with it", fakeHost{scope: []string{cgroup.Memory, cgroup.Pids}, cgroup: all}, memCPU, enforcement{memory: byCgroup, cpus: byCgroup}, ""},
		{"user, scope without cpu, no cgroup", fakeHost{scope: []string{cgroup.Memory}}, cpus, enforcement{}, "no cpu controller for the scope"},
		{"root: RLIMIT_NPROC does not bind it", fakeHost{root: true}, pids, enforcement{}, "does not apply RLIMIT_NPROC to root"},
		{"root, cgroup v1", fakeHost{root: true, cgroup: all}, pids, enforcement{pids: byCgroup}, ""},
		{"root, everything in the cgroup", fakeHost{root: true, cgroup: all, scope: all}, every, enforcement{pids: byCgroup, memory: byCgroup, cpus: byCgroup}, ""},
		{"root, scope only", fakeHost{root: true, scope: all}, every, enforcement{pids: byScope, memory: byScope, cpus: byScope}, ""},
		{"root, cgroup without pids", fakeHost{root: true, cgroup: []string{cgroup.Memory, cgroup.CPU}}, pidsMem, enforcement{memory: byCgroup}, "limits.pids (4096)"},
		{"root, cgroup without cpu", fakeHost{root: true, cgroup: []string{cgroup.Pids, cgroup.Memory}}, memCPU, enforcement{}, "no cpu controller for the cgroup"},
		{"root, pids off", fakeHost{root: true}, isolator.Limits{}, enforcement{}, ""},
	} {
		got, err := chooseLimits(tc.limits, tc.host.limitHost())
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want ErrProtection saying %q", tc.name, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestChooseLimitsAsksOnlyWhatItNeeds(t *testing.T) {
	h := fakeHost{}.limitHost()
	h.cgroup = func(...string) error { t.Error("probed the cgroups for a limit RLIMIT_NPROC enforces"); return nil }
	h.scope = func(...string) error { t.Error("asked for a scope for a limit RLIMIT_NPROC enforces"); return nil }
	if _, err := chooseLimits(isolator.Limits{Pids: 4096}, h); err != nil {
		t.Fatal(err)
	}
}

func TestLimitsErrorNamesKeysReasonsAndFix(t *testing.T) {
	_, err := chooseLimits(isolator.Limits{CPUs: 1}, fakeHost{}.limitHost())
	if !errors.Is(err, isolator.ErrProtection) {
		t.Fatalf("%v is not ErrProtection", err)
	}
	for _, want := range []string{"limits.cpus (--cpus)", "no scope here; no cgroup here", "the command did not run", "--isolator=docker", "devsandbox doctor"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "limits.memory") {
		t.Errorf("%q names a limit that was not asked for", err)
	}
	_, err = chooseLimits(isolator.Limits{Pids: 4096}, fakeHost{root: true}.limitHost())
	for _, want := range []string{"limits.pids (4096)", "no cgroup here; no scope here; the kernel does not apply RLIMIT_NPROC to root", "limits.pids = 0 (--pids=0)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not say %q", err, want)
		}
	}
}

func TestExposedCgroups(t *testing.T) {
	mounts := []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"}
	for _, tc := range []struct {
		mount isolator.Mount
		bad   bool
	}{
		{isolator.Mount{Kind: isolator.Bind, Source: "/sys", Why: "sandbox.rw_binds"}, true},
		{isolator.Mount{Kind: isolator.Bind, Source: "/", Why: "sandbox.host_mounts"}, true},
		{isolator.Mount{Kind: isolator.Bind, Source: "/sys/fs/cgroup/pids/ci", Why: "--mount"}, true},
		{isolator.Mount{Kind: isolator.Bind, Source: "/sys", ReadOnly: true, Why: "sandbox.ro_binds"}, false},
		{isolator.Mount{Kind: isolator.Bind, Source: "/sys/fs/cgroupfoo", Why: "--mount"}, false},
		{isolator.Mount{Kind: isolator.TmpDir, Dest: "/sys/fs/cgroup", Why: "tool"}, false},
		{isolator.Mount{Kind: isolator.Bind, Source: "/home/u/src/app", Why: "project"}, false},
	} {
		p := &isolator.Plan{Mounts: []isolator.Mount{tc.mount}}
		err := exposedCgroups(p, mounts)
		if (err != nil) != tc.bad || err != nil && !errors.Is(err, isolator.ErrProtection) {
			t.Errorf("%+v: %v, want refused = %v", tc.mount, err, tc.bad)
		}
	}
}
