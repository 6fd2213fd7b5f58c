package syscalls

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv names the policy (its relaxed groups) a re-executed test binary loads
// before it runs the probes and reports what each returned.
const childEnv = "DEVSANDBOX_SECCOMP_CHILD"

func TestMain(m *testing.M) {
	if relax, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(relax))
	}
	os.Exit(m.Run())
}

// probe is one raw system call. Arguments are chosen so that an allowed call fails in
// the kernel with an errno of its own (EBADF, EFAULT, EINVAL, ...) or succeeds
// harmlessly, where the filter's refusal is EPERM or ENOSYS.
type probe struct {
	label string
	name  string
	args  [6]uintptr
	fd    bool // success returns a descriptor to close
}

const (
	tiocGWINSZ   = 0x5413
	cloneThread  = 0x00010000
	cloneFS      = 0x00000200
	netlinkNFT   = 12
	afPacket     = 17
	afVsock      = 40
	sockStream   = 1
	sockRaw      = 3
	ptraceAttach = 16
)

var probes = []probe{
	{"getpid", "getpid", [6]uintptr{}, false},
	{"ioctl TIOCGWINSZ", "ioctl", [6]uintptr{^uintptr(0), tiocGWINSZ}, false},
	{"ioctl TIOCSTI", "ioctl", [6]uintptr{^uintptr(0), tiocSTI}, false},
	{"ioctl TIOCSTI high bits", "ioctl", [6]uintptr{^uintptr(0), 1<<32 | tiocSTI}, false},
	{"ioctl TIOCLINUX", "ioctl", [6]uintptr{^uintptr(0), tiocLINUX}, false},
	{"ioctl TIOCSETD", "ioctl", [6]uintptr{^uintptr(0), tiocSETD}, false},
	{"socket AF_UNIX", "socket", [6]uintptr{afUnix, sockStream}, true},
	{"socket AF_INET", "socket", [6]uintptr{afInet, sockStream}, true},
	{"socket NETLINK_ROUTE", "socket", [6]uintptr{afNetlink, sockRaw, netlinkRoute}, true},
	{"socket NETLINK_NETFILTER", "socket", [6]uintptr{afNetlink, sockRaw, netlinkNFT}, true},
	{"socket AF_PACKET", "socket", [6]uintptr{afPacket, sockRaw}, true},
	{"socket AF_VSOCK", "socket", [6]uintptr{afVsock, sockStream}, true},
	{"socketpair AF_UNIX", "socketpair", [6]uintptr{afUnix, sockStream, 0, 0}, false},
	{"socketpair AF_INET", "socketpair", [6]uintptr{afInet, sockStream, 0, 0}, false},
	{"clone CLONE_THREAD", "clone", [6]uintptr{cloneThread}, false},
	{"clone CLONE_NEWUSER", "clone", [6]uintptr{cloneNewUser | cloneFS}, false},
	{"clone3", "clone3", [6]uintptr{0, 0}, false},
	{"unshare CLONE_NEWUSER", "unshare", [6]uintptr{cloneNewUser}, false},
	{"setns", "setns", [6]uintptr{^uintptr(0), 0}, false},
	{"mount", "mount", [6]uintptr{0, 0, 1}, false},
	{"chroot", "chroot", [6]uintptr{1}, false},
	{"io_uring_setup", "io_uring_setup", [6]uintptr{1, 0}, false},
	{"io_uring_enter", "io_uring_enter", [6]uintptr{^uintptr(0)}, false},
	{"perf_event_open", "perf_event_open", [6]uintptr{0, 0, ^uintptr(0), ^uintptr(0), 0}, false},
	{"bpf", "bpf", [6]uintptr{^uintptr(0), 0, 0}, false},
	{"keyctl", "keyctl", [6]uintptr{^uintptr(0)}, false},
	{"userfaultfd", "userfaultfd", [6]uintptr{^uintptr(0)}, false},
	{"vmsplice", "vmsplice", [6]uintptr{^uintptr(0)}, false},
	{"open_by_handle_at", "open_by_handle_at", [6]uintptr{^uintptr(0)}, false},
	{"ptrace PTRACE_ATTACH", "ptrace", [6]uintptr{ptraceAttach, 0x7ffffff0}, false},
	{"process_vm_readv", "process_vm_readv", [6]uintptr{0x7ffffff0}, false},
	{"personality query", "personality", [6]uintptr{0xffffffff}, false},
	{"personality ADDR_NO_RANDOMIZE", "personality", [6]uintptr{0x0040000}, false},
	{"futex_waitv", "futex_waitv", [6]uintptr{}, false},
}

// outcome is what the child saw.
type outcome struct {
	Errno   map[string]int    `json:"errno"`
	Runtime map[string]string `json:"runtime"` // "" when it worked
}

func child(relax string) int {
	pol, err := New(strings.Fields(relax))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	arch, err := Native()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	prog, err := Seccomp(pol, arch)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := load(prog); err != nil {
		fmt.Fprintln(os.Stderr, "loading the filter:", err)
		return 2
	}
	out := outcome{Errno: map[string]int{}, Runtime: map[string]string{}}
	for _, p := range probes {
		nr, ok := number(arch, p.name)
		if !ok {
			continue
		}
		r, _, e := unix.Syscall6(uintptr(nr), p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
		if e == 0 && p.fd {
			unix.Close(int(r))
		}
		out.Errno[p.label] = int(e)
	}
	if arch == AMD64 {
		_, _, e := unix.Syscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
		out.Errno["x32 getpid"] = int(e)
	}
	_, _, e := unix.Syscall(1000, 0, 0, 0)
	out.Errno["number 1000"] = int(e)
	out.Runtime = runtimeChecks()
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 2
	}
	return 0
}

// runtimeChecks exercises what the Go runtime and its standard library do under
// the filter: threads, the collector, starting a program, sockets, /proc.
func runtimeChecks() map[string]string {
	res := map[string]string{}
	errs := func(name string, err error) {
		res[name] = ""
		if err != nil {
			res[name] = err.Error()
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // a thread of its own
			_ = make([]byte, 1<<20)
		}()
	}
	wg.Wait()
	runtime.GC()
	errs("exec /bin/true", exec.Command("/bin/true").Run())
	errs("exec sh pipeline", exec.Command("/bin/sh", "-c", "echo x | cat >/dev/null").Run())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		var c net.Conn
		c, err = net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		ln.Close()
	}
	errs("tcp loopback", err)
	_, err = net.Interfaces()
	errs("net.Interfaces", err)
	_, err = os.ReadDir("/proc/self/fd")
	errs("read /proc/self/fd", err)
	return res
}

// load installs prog for every thread of the process.
func load(prog []byte) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
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
		return e
	}
	return nil
}

func runChild(t *testing.T, relax string) outcome {
	t.Helper()
	if _, err := Native(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+relax)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child under policy %q failed: %v\n%s", relax, err, stderr.String())
	}
	var out outcome
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("child output %q: %v", b, err)
	}
	for name, msg := range out.Runtime {
		if msg != "" {
			t.Errorf("policy %q: %s: %s", relax, name, msg)
		}
	}
	return out
}

// filtered are the errnos the filter returns; an allowed call must fail with another.
func filtered(e int) bool { return e == int(unix.EPERM) || e == int(unix.ENOSYS) }

// TestLoadedStrict loads the strict program in a child process and checks what each
// probe returns: refusals get the filter's errno, allowed calls reach the kernel.
func TestLoadedStrict(t *testing.T) {
	out := runChild(t, "")
	eperm, enosys := int(unix.EPERM), int(unix.ENOSYS)
	want := map[string]int{
		"ioctl TIOCSTI": eperm, "ioctl TIOCSTI high bits": eperm, "ioctl TIOCLINUX": eperm, "ioctl TIOCSETD": eperm,
		"socket NETLINK_NETFILTER": eperm, "socket AF_PACKET": eperm, "socket AF_VSOCK": eperm, "socketpair AF_INET": eperm,
		"clone CLONE_NEWUSER": eperm, "clone3": enosys, "unshare CLONE_NEWUSER": eperm, "setns": eperm, "mount": eperm,
		"chroot": eperm, "io_uring_setup": enosys, "io_uring_enter": enosys, "perf_event_open": eperm, "bpf": eperm,
		"keyctl": eperm, "userfaultfd": eperm, "vmsplice": eperm, "open_by_handle_at": eperm,
		"personality ADDR_NO_RANDOMIZE": eperm, "futex_waitv": enosys, "number 1000": enosys, "x32 getpid": enosys,
	}
	reached := []string{"getpid", "ioctl TIOCGWINSZ", "socket AF_UNIX", "socket AF_INET", "socket NETLINK_ROUTE",
		"socketpair AF_UNIX", "clone CLONE_THREAD", "ptrace PTRACE_ATTACH", "process_vm_readv", "personality query"}
	for label, e := range want {
		got, ok := out.Errno[label]
		if !ok && label == "x32 getpid" {
			continue
		}
		if got != e {
			t.Errorf("%s: errno %d (%v), want %d (%v)", label, got, unix.Errno(got), e, unix.Errno(e))
		}
	}
	for _, label := range reached {
		if e, ok := out.Errno[label]; !ok || filtered(e) {
			t.Errorf("%s: errno %d (%v): refused by the filter, want it allowed", label, e, unix.Errno(e))
		}
	}
}

// TestLoadedRelaxed: every group relaxed, its calls reach the kernel.
func TestLoadedRelaxed(t *testing.T) {
	out := runChild(t, strings.Join(GroupNames(), " "))
	for _, label := range []string{"clone CLONE_NEWUSER", "clone3", "unshare CLONE_NEWUSER", "setns", "mount", "chroot",
		"io_uring_setup", "io_uring_enter", "perf_event_open", "socket NETLINK_NETFILTER", "socketpair AF_INET"} {
		if e := out.Errno[label]; filtered(e) {
			t.Errorf("%s: errno %d (%v): refused although relaxed", label, e, unix.Errno(e))
		}
	}
	// What no group relaxes stays refused.
	for _, label := range []string{"ioctl TIOCSTI", "bpf", "keyctl"} {
		if e := out.Errno[label]; e != int(unix.EPERM) {
			t.Errorf("%s: errno %d (%v), want EPERM", label, e, unix.Errno(e))
		}
	}
}
