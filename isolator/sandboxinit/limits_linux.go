package sandboxinit

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/cgroup"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

// LoadSeccomp installs the seccomp program of policy for every thread of the process
// (and so for everything it starts); no_new_privs is set first, as the kernel
// requires of an unprivileged process.
func LoadSeccomp(policy syscalls.Policy) error {
	arch, err := syscalls.Native()
	if err != nil {
		return err
	}
	prog, err := syscalls.Seccomp(policy, arch)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	fs := make([]unix.SockFilter, len(prog)/8)
	for i := range fs {
		b := prog[8*i:]
		fs[i] = unix.SockFilter{Code: uint16(b[0]) | uint16(b[1])<<8, Jt: b[2], Jf: b[3], K: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24}
	}
	fp := unix.SockFprog{Len: uint16(len(fs)), Filter: &fs[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fp)))
	runtime.KeepAlive(fs)
	if e != 0 {
		return fmt.Errorf("loading the syscall policy's seccomp program: %w", e)
	}
	return nil
}

// oomKills returns the number of out-of-memory kills in the sandbox so far: the
// container's memory cgroup (v2, then v1), or, in a virtual machine, the guest
// kernel's count. -1 when none can be read.
func oomKills(m *wire.Manifest) int {
	files := []struct{ path, key string }{
		{"/sys/fs/cgroup/memory.events", "oom_kill"},
		{"/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"},
	}
	if m.OOMFromVMStat {
		files = []struct{ path, key string }{{"/proc/vmstat", "oom_kill"}}
	}
	for _, f := range files {
		if n, ok := cgroup.Counter(f.path, f.key); ok {
			return n
		}
	}
	return -1
}
