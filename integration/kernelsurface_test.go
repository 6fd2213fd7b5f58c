//go:build integration

package integration

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelCall is one raw system call the kernel-surface test makes: a name for the
// report, the call's number and its arguments ("self" is the caller's pid).
type kernelCall struct {
	name string
	nr   uintptr
	args []string
	// host is false when the call may fail with EPERM outside a sandbox too (a
	// capability or a sysctl refuses it on some kernels), so a control run there
	// proves nothing. (Linux 6.18 here: bpf EINVAL, open_by_handle_at EFAULT.)
	host bool
}

// kernelCalls are the calls of the kernel surface the syscall policy refuses that no
// other bypass test makes. The arguments are chosen so that, unfiltered, the call
// works or fails with an errno other than EPERM (EFAULT, EBADF): the sandbox's EPERM
// is then the policy's.
var kernelCalls = []kernelCall{
	// Whole classes of kernel exploits: userfaultfd pauses the kernel inside a copy
	// (the use-after-free races of CVE-2021-22555, CVE-2022-0185); user-mode-only
	// faults need no privilege.
	{"userfaultfd", unix.SYS_USERFAULTFD, []string{"1"}, true},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, []string{"0", "0", "0xffffffff", "0xffffffff", "0"}, true},
	{"bpf", unix.SYS_BPF, []string{"0", "0", "0"}, false}, // EPERM before Linux 5.19 under unprivileged_bpf_disabled
	// The keyring is not namespaced: the session keyring the sandbox inherits is the
	// user's on the host (keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)).
	{"keyctl", unix.SYS_KEYCTL, []string{"0", "0xfffffffd", "0"}, true},
	{"add_key", unix.SYS_ADD_KEY, []string{"0", "0", "0", "0", "0xfffffffd"}, true},
	{"request_key", unix.SYS_REQUEST_KEY, []string{"0", "0", "0", "0"}, true},
	// Reaching into other processes beyond ptrace's checks.
	{"kcmp", unix.SYS_KCMP, []string{"self", "self", "1", "0", "0"}, true},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD, []string{"0xffffffff", "0", "0"}, true},
	{"process_madvise", unix.SYS_PROCESS_MADVISE, []string{"0xffffffff", "0", "0", "0", "0"}, true},
	// Leaving the sandbox's namespaces and mounts: setns into a namespace a
	// descriptor names, open_by_handle_at past a bind mount to any inode of the
	// file system (the "shocker" escape from Docker 0.x; since Linux 6.10 the kernel
	// lets an unprivileged caller decode some handles itself), mount.
	{"setns", unix.SYS_SETNS, []string{"0xffffffff", "0"}, true},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, []string{"0xffffffff", "0", "0"}, false}, // EPERM before 6.10
	{"mount", unix.SYS_MOUNT, []string{"0", "0", "0", "0", "0"}, true},
	{"fsopen", unix.SYS_FSOPEN, []string{"0", "0"}, false},
	// Personalities beyond the runtimes' list (ADDR_NO_RANDOMIZE: ASLR off).
	{"personality", unix.SYS_PERSONALITY, []string{"0x0040000"}, true},
}

// The rest of the kernel surface the syscall policy refuses, tried from inside every
// isolator: each call is refused with the policy's EPERM, and a control run of the
// same calls outside the sandbox shows the calls marked host were not refused there
// (so the test cannot pass on a kernel that refuses them anyway). The device nodes
// that reach the same surface past the filter (/dev/userfaultfd's ioctl, /dev/kvm,
// /dev/kmsg, /dev/mem) are absent.
func TestBypassKernelSurface(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the calls are numbered for amd64 and arm64, not %s", runtime.GOARCH)
	}
	var script strings.Builder
	for _, c := range kernelCalls {
		fmt.Fprintf(&script, "\"$PROBE\" call %s %d %s\n", c.name, c.nr, strings.Join(c.args, " "))
	}
	for _, d := range []string{"userfaultfd", "kvm", "kmsg", "mem", "port"} {
		fmt.Fprintf(&script, "[ -e /dev/%[1]s ] && echo 'dev-%[1]s ok' || echo 'dev-%[1]s absent'\n", d)
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()

		control := exec.Command("/bin/sh", "-c", script.String())
		control.Env = []string{"PROBE=" + probe, "PATH=/usr/bin:/bin"}
		if it.asOther {
			control.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}}
		}
		out, err := control.CombinedOutput()
		if err != nil {
			t.Fatalf("control run outside the sandbox: %v\n%s", err, out)
		}
		host := probeLines(string(out))
		for _, c := range kernelCalls {
			if r := host[c.name]; c.host && (r == "" || r == "EPERM") {
				t.Errorf("outside the sandbox %s gave %q: the control proves nothing\n%s", c.name, r, out)
			}
		}

		got := probeLines(p.mustSandbox(iso, nil, "PROBE="+probe+"\n"+script.String()))
		for _, c := range kernelCalls {
			refused(t, got, "EPERM", c.name)
		}
		for _, d := range []string{"userfaultfd", "kvm", "kmsg", "mem", "port"} {
			refused(t, got, "", "dev-"+d)
		}
	})
}
