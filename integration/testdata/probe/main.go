// Command probe tries, from inside a sandbox, the escapes and bypasses the integration
// tests hold every isolator to, and reports one line per attempt: "NAME ok" when it
// worked, "NAME <errno or error>" when it did not. It is built static (CGO_ENABLED=0)
// by the tests and copied into the project, which every isolator shows at its path.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe CHECK [ARG...]")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "userns":
		userns()
	case "iouring":
		report("io_uring_setup", ioUringSetup())
	case "tiocsti":
		tiocsti()
	case "ptrace":
		pid, _ := strconv.Atoi(args[0])
		report("ptrace "+args[0], ptraceAttach(pid))
	case "seccomp":
		// The seccomp mode of a process (2: filtered).
		b, err := os.ReadFile("/proc/" + args[0] + "/status")
		if err != nil {
			report("seccomp "+args[0], err)
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				fmt.Printf("seccomp %s %s\n", args[0], strings.TrimSpace(v))
			}
		}
	case "write":
		report("write "+args[0], write(args[0]))
	case "socket":
		family, _ := strconv.Atoi(args[0])
		typ, _ := strconv.Atoi(args[1])
		proto, _ := strconv.Atoi(args[2])
		fd, err := unix.Socket(family, typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		report("socket "+strings.Join(args, " "), err)
	case "syscall":
		// A raw call by number with integer arguments: "syscall NR A0 A1 ...".
		var a [6]uintptr
		nr, _ := strconv.ParseUint(args[0], 0, 64)
		for i, s := range args[1:] {
			v, _ := strconv.ParseUint(s, 0, 64)
			a[i] = uintptr(v)
		}
		_, _, e := unix.Syscall6(uintptr(nr), a[0], a[1], a[2], a[3], a[4], a[5])
		report("syscall "+strings.Join(args, " "), errOf(e))
	case "call":
		// A raw call by number, named for the report: "call NAME NR A0 A1 ...";
		// an argument "self" is the probe's pid.
		var a [6]uintptr
		nr, _ := strconv.ParseUint(args[1], 0, 64)
		for i, s := range args[2:] {
			if s == "self" {
				a[i] = uintptr(os.Getpid())
				continue
			}
			v, _ := strconv.ParseUint(s, 0, 64)
			a[i] = uintptr(v)
		}
		_, _, e := unix.Syscall6(uintptr(nr), a[0], a[1], a[2], a[3], a[4], a[5])
		report(args[0], errOf(e))
	case "forkstorm":
		n, _ := strconv.Atoi(args[0])
		forkstorm(n)
	case "memhog":
		mib, _ := strconv.Atoi(args[0])
		memhog(mib)
	case "debugger":
		report("debugger", debugger())
	case "goruntime":
		report("goruntime", goRuntime())
	case "ping":
		report("ping "+args[0], ping(args[0]))
	case "udp":
		c, err := dialUDP(args[0], []byte(args[1]))
		if c != nil {
			c.Close()
		}
		report("udp "+args[0], err)
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown check %q\n", os.Args[1])
		os.Exit(2)
	}
}

func errOf(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func report(name string, err error) {
	if err == nil {
		fmt.Printf("%s ok\n", name)
		return
	}
	msg := err.Error()
	if e, ok := err.(syscall.Errno); ok {
		msg = unix.ErrnoName(e)
	}
	fmt.Printf("%s %s\n", name, strings.ReplaceAll(msg, " ", "_"))
}

// userns tries every way to a new user namespace.
func userns() {
	runtime.LockOSThread()
	_, _, e := unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	// unshare(CLONE_NEWUSER) is refused to a multithreaded process (EINVAL): that
	// proves nothing, the child below does.
	report("unshare", errOf(e))
	cmd := exec.Command("/proc/self/exe", "syscall", strconv.Itoa(unix.SYS_GETPID))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	report("clone-newuser", cmd.Run())
	cmd = exec.Command("/proc/self/exe", "syscall", strconv.Itoa(unix.SYS_GETPID))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET}
	report("clone-newuser-newns-newnet", cmd.Run())
	// clone3 with a NULL argument: ENOSYS from a filter, EINVAL from the kernel.
	_, _, e = unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	report("clone3", errOf(e))
}

// ioUringSetup creates an io_uring and closes it.
func ioUringSetup() error {
	var params [120]byte
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	return nil
}

// tiocsti pushes a command into the input of the terminal on stdin, and tries the
// other terminal ioctls the policy refuses.
func tiocsti() {
	line := "echo INJECTED\n"
	var err error
	for i := 0; i < len(line) && err == nil; i++ {
		c := line[i]
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		err = errOf(e)
	}
	report("TIOCSTI", err)
	c := byte('x')
	// The request with high bits set: the kernel reads 32 bits (CVE-2019-10063).
	_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	report("TIOCSTI-high-bits", errOf(e))
	sub := byte(2) // TIOCL_PASTESEL
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub)))
	report("TIOCLINUX", errOf(e))
	ldisc := int32(21) // N_GSM
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSETD, uintptr(unsafe.Pointer(&ldisc)))
	report("TIOCSETD", errOf(e))
}

func ptraceAttach(pid int) error {
	runtime.LockOSThread()
	if err := unix.PtraceAttach(pid); err != nil {
		return err
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WALL, nil)
	return unix.PtraceDetach(pid)
}

func write(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString("written from the sandbox\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// forkstorm starts up to n processes that wait, reports how many started and why the
// next could not, prints HOLD and keeps them until stdin ends.
func forkstorm(n int) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		report("forkstorm", err)
		return
	}
	var pids []int
	var ferr error
	for len(pids) < n {
		pid, err := syscall.ForkExec(sleep, []string{"sleep", "120"}, &syscall.ProcAttr{})
		if err != nil {
			ferr = err
			break
		}
		pids = append(pids, pid)
	}
	msg := "none"
	if ferr != nil {
		msg = unix.ErrnoName(ferr.(syscall.Errno))
	}
	fmt.Printf("forkstorm started %d refused %s\nHOLD\n", len(pids), msg)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p, &ws, 0, nil)
	}
}

// memhog allocates and touches mib MiB, reporting as it goes.
func memhog(mib int) {
	var keep [][]byte
	for i := 1; i <= mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
		if i%16 == 0 {
			fmt.Printf("memhog %d\n", i)
		}
	}
	fmt.Printf("memhog done %d\n", len(keep))
	time.Sleep(10 * time.Millisecond)
}

// debugger does what a debugger does to the sandbox's own processes: start one
// traced (PTRACE_TRACEME), attach to a running one, read its memory with
// process_vm_readv, and let both go.
func debugger() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	traced := exec.Command("/bin/true")
	traced.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := traced.Start(); err != nil {
		return fmt.Errorf("starting a traced process: %w", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(traced.Process.Pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return fmt.Errorf("the traced process did not stop at exec: %v %v", err, ws)
	}
	if err := unix.PtraceCont(traced.Process.Pid, 0); err != nil {
		return err
	}
	_ = traced.Wait()
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		return err
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	pid := sleeper.Process.Pid
	if err := unix.PtraceAttach(pid); err != nil {
		return fmt.Errorf("attaching: %w", err)
	}
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return err
	}
	regs := &unix.PtraceRegs{}
	if err := unix.PtraceGetRegs(pid, regs); err != nil {
		return fmt.Errorf("reading registers: %w", err)
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	var lo uint64
	fmt.Sscanf(string(maps), "%x-", &lo)
	buf := make([]byte, 64)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(lo), Len: len(buf)}}
	if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil {
		return fmt.Errorf("process_vm_readv: %w", err)
	}
	return unix.PtraceDetach(pid)
}

// goRuntime exercises the Go runtime under the sandbox's policy: threads, the
// collector, a child process, loopback sockets, and a CPU profile (timers and
// SIGPROF, no perf events).
func goRuntime() error {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var sink atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := int64(0)
			for i := range int64(100_000_000) {
				s += i
			}
			sink.Add(s)
		}()
	}
	wg.Wait()
	runtime.GC()
	pprof.StopCPUProfile()
	p, err := profile(buf.Bytes())
	if err != nil {
		return err
	}
	if !p {
		return fmt.Errorf("the CPU profile has no samples")
	}
	if err := exec.Command("true").Run(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	c.Close()
	_, err = net.Interfaces()
	return err
}

// profile reports whether a gzipped pprof profile holds samples (by size: an empty
// profile is a few hundred bytes).
func profile(b []byte) (bool, error) {
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return false, err
	}
	raw, err := io.ReadAll(z)
	return len(raw) > 1000, err
}

// ping sends one ICMP echo request to the IPv4 address addr, from a raw socket if
// the sandbox may open one, else a datagram ("ping") socket, and waits 2 s for the
// reply: nil only when one came back.
func ping(addr string) error {
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return fmt.Errorf("not an IPv4 address: %q", addr)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	raw := err == nil
	if !raw {
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP); err != nil {
			return err
		}
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2}); err != nil {
		return err
	}
	// Type 8 (echo request), code 0, checksum, id, sequence 1, payload.
	pkt := []byte{8, 0, 0, 0, 0x44, 0x53, 0, 1, 'd', 's', 'b'}
	var sum uint32
	for i := 0; i+1 < len(pkt); i += 2 {
		sum += uint32(pkt[i])<<8 | uint32(pkt[i+1])
	}
	sum += uint32(pkt[len(pkt)-1]) << 8
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	pkt[2], pkt[3] = byte(^sum>>8), byte(^sum)
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], ip)
	if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		b := buf[:n]
		if raw && n > 20 {
			b = b[int(b[0]&0xf)*4:] // past the IP header
		}
		if len(b) > 0 && b[0] == 0 { // echo reply
			return nil
		}
	}
}

func dialUDP(addr string, payload []byte) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	p, _ := strconv.Atoi(port)
	var ip [4]byte
	for i, s := range strings.Split(host, ".") {
		v, _ := strconv.Atoi(s)
		ip[i] = byte(v)
	}
	f := os.NewFile(uintptr(fd), "udp")
	return f, unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Port: p, Addr: ip})
}
