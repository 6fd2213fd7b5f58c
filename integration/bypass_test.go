//go:build integration

package integration

// The known-bypass suite: escapes and bypasses reported against sandboxes of this
// kind (bubblewrap-based agent sandboxes, flatpak, container runtimes, egress
// proxies), each tried from inside every isolator and each required to fail. Every
// test names where the technique was reported. The probe program (testdata/probe)
// makes the attempts and prints "NAME ok" for each that worked.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

var probeBuild struct {
	once sync.Once
	path string
	err  error
}

// installProbe builds the probe (once per test binary) and copies it into the
// project, where every isolator shows it at the same path.
func (p *project) installProbe() string {
	p.t.Helper()
	probeBuild.once.Do(func() {
		dir, err := os.MkdirTemp(it.tmp, "probe-")
		if err != nil {
			probeBuild.err = err
			return
		}
		probeBuild.path = filepath.Join(dir, "probe")
		cmd := exec.Command("go", "build", "-o", probeBuild.path, "./testdata/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeBuild.err = fmt.Errorf("building the probe: %v\n%s", err, out)
		}
	})
	if probeBuild.err != nil {
		p.t.Fatal(probeBuild.err)
	}
	data, err := os.ReadFile(probeBuild.path)
	if err != nil {
		p.t.Fatal(err)
	}
	dst := filepath.Join(p.dir, "probe")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		p.t.Fatal(err)
	}
	p.chownUp(dst)
	return dst
}

// probeLines parses the probe's "NAME RESULT" lines.
func probeLines(out string) map[string]string {
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			got[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
		}
	}
	return got
}

// refused fails the test for each named attempt that worked or did not report, and
// for each whose error is not want (when want is set: the policy's own errno).
func refused(t *testing.T, got map[string]string, want string, names ...string) {
	t.Helper()
	for _, n := range names {
		switch r, ok := got[n]; {
		case !ok:
			t.Errorf("%s: no result", n)
		case r == "ok":
			t.Errorf("%s: the attempt worked", n)
		case want != "" && r != want:
			t.Errorf("%s: %s, want %s (the syscall policy's refusal)", n, r, want)
		}
	}
}

// A child in a new user namespace gets root's view of the kernel's mount, netfilter
// and other interfaces, through which most kernel privilege escalations go. Reported:
// CVE-2022-0185 (fsconfig heap overflow reached from an unprivileged user namespace,
// container escapes shown); bubblewrap 0.8.0 added --disable-userns for it; the issue
// that introduced this suite saw a child start in a new user namespace inside bwrap
// and inside podman with runc. clone3 is refused too (its flags are out of a filter's
// reach), and the x32 ABI's numbers with bit 30 (reported against firejail's
// filter, netblue30/firejail#87).
func TestBypassNestedUserNamespace(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		script := probe + ` userns
			unshare -Ur true 2>/dev/null && echo "unshare-command ok" || echo "unshare-command refused"`
		if runtime.GOARCH == "amd64" {
			// A single-threaded caller: a runtime that kills the calling thread
			// (runc's filter for an ABI it does not list) ends the process.
			script += fmt.Sprintf(`
			python3 -c 'import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall(%#x, %#x); print("x32-unshare", "ok" if r == 0 else os.strerror(ctypes.get_errno()).replace(" ", "_"))' 2>/dev/null || echo "x32-unshare killed"`,
				0x40000000|unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
		}
		got := probeLines(p.mustSandbox(iso, nil, script))
		refused(t, got, "", "unshare", "clone-newuser", "clone-newuser-newns-newnet", "unshare-command")
		refused(t, got, "ENOSYS", "clone3")
		if runtime.GOARCH == "amd64" {
			refused(t, got, "", "x32-unshare")
		}
	})
}

// io_uring's operations run without passing the syscall filter, and it has had a
// stream of kernel exploits: Google reported 60% of the kernel exploits submitted to
// its 2022 bug bounty used it, and turned it off in ChromeOS, Android and its
// production servers (Google security blog, June 2023); Docker's default profile
// allowed it until 25.0 (moby/moby#46762).
func TestBypassIOUring(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		refused(t, probeLines(p.mustSandbox(iso, nil, probe+" iouring")), "ENOSYS", "io_uring_setup")
	})
}

// Socket families a development sandbox has no use for, each with kernel exploits
// of its own: AF_PACKET (CVE-2020-14386, CVE-2017-7308), AF_VSOCK (CVE-2021-26708),
// netlink's netfilter (CVE-2022-25636, CVE-2023-32233, reached from a user
// namespace), AF_TIPC (CVE-2021-43267), AF_ALG (CVE-2021-3527 ...).
func TestBypassSocketFamilies(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		cases := []string{"17 3 768", "40 1 0", "16 3 12", "30 5 0", "38 5 0"} // AF_PACKET, AF_VSOCK, NETLINK_NETFILTER, AF_TIPC, AF_ALG
		var script strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&script, "%s socket %s\n", probe, c)
		}
		fmt.Fprintf(&script, "%s socket 2 1 0\n%s socket 16 3 0\n", probe, probe) // AF_INET and routing netlink keep working
		got := probeLines(p.mustSandbox(iso, nil, script.String()))
		for _, c := range cases {
			refused(t, got, "EPERM", "socket "+c)
		}
		for _, c := range []string{"socket 2 1 0", "socket 16 3 0"} {
			if got[c] != "ok" {
				t.Errorf("%s: %s, want it to work", c, got[c])
			}
		}
	})
}

// Terminal injection: TIOCSTI pushes input into a terminal the sandbox shares, to be
// run by the shell outside once the sandbox exits (bubblewrap CVE-2017-5226, fixed
// with --new-session); a request with high bits set passes a filter comparing 64 bits
// while the kernel reads 32 (flatpak CVE-2019-10063); TIOCLINUX pastes a virtual
// console's selection as input (snapd CVE-2023-1523). TIOCSETD loads line
// disciplines, whose bugs are local root exploits (n_gsm CVE-2023-6546, n_hdlc
// CVE-2017-2636). The outer terminal here is the test's pty, given as stdin.
func TestBypassTerminalInjection(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		master, slave, err := tty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		defer slave.Close()
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", probe, "tiocsti")
		var out, errb strings.Builder
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &errb
		_ = cmd.Run()
		if cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("probe: exit %d\n%s%s", cmd.ProcessState.ExitCode(), out.String(), errb.String())
		}
		refused(t, probeLines(out.String()), "EPERM", "TIOCSTI", "TIOCSTI-high-bits", "TIOCLINUX", "TIOCSETD")
		// Nothing reached the outer terminal's input.
		if err := unix.SetNonblock(int(slave.Fd()), true); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		if n, _ := unix.Read(int(slave.Fd()), buf); n > 0 {
			t.Errorf("the outer terminal received input from the sandbox: %q", buf[:n])
		}
	})
}

// ptrace of a process outside the sandbox (the user's shell, an editor holding
// secrets) must fail: the sandbox has a pid namespace of its own. Nor may the
// sandbox ptrace a process inside that runs without the filter and make the calls
// the filter refuses: pid 1 must be filtered too, or be out of reach.
func TestBypassPtrace(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		victim := exec.Command("sleep", "300")
		victim.SysProcAttr = &syscall.SysProcAttr{}
		if it.asOther {
			victim.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}
		}
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
		pid := strconv.Itoa(victim.Process.Pid)
		got := probeLines(p.mustSandbox(iso, nil, probe+" ptrace "+pid+"; "+probe+" ptrace 1; "+probe+" seccomp 1"))
		refused(t, got, "", "ptrace "+pid)
		if got["ptrace 1"] == "ok" && got["seccomp 1"] != "2" {
			t.Errorf("the sandbox can ptrace its pid 1, which runs without the syscall filter (Seccomp: %s)", got["seccomp 1"])
		}
		if st := procs.Status(victim.Process.Pid); st["TracerPid"] != "0" {
			t.Errorf("the process outside is traced: %q", st)
		}
	})
}

// Writing host files through /proc: the runtime's own binary through /proc/<pid>/exe
// (runc CVE-2019-5736), a host directory through a descriptor leaked into the sandbox
// (/proc/self/fd/N, runc CVE-2024-21626 "Leaky Vessels"), and a host process's root
// through /proc/<pid>/root.
func TestBypassProcWrites(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		outsideDir := p.path("outside")
		p.mkdir("outside")
		dirFD, err := os.Open(outsideDir)
		if err != nil {
			t.Fatal(err)
		}
		defer dirFD.Close()
		victim := exec.Command("sleep", "300")
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
		hostTarget := filepath.Join("/proc", strconv.Itoa(victim.Process.Pid), "root", outsideDir, "via-root")
		ctx := t.Context()
		cmd := command(ctx, p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c",
			// Where the descriptors of every process the command reaches lead: none to
			// the host directory, none to a system file (bwrap reads those from
			// descriptors devsandbox opened).
			fdProbe+probe+" write /proc/self/fd/3/via-fd; "+probe+" write /proc/1/exe; "+probe+" write "+hostTarget)
		cmd.ExtraFiles = []*os.File{dirFD} // fd 3 of devsandbox: a host directory
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v\n%s", err, out)
		}
		got := probeLines(string(out))
		fds := parseFDProbe(t, string(out))
		if leaks := fds.leadingTo(func(target string) bool { return target == outsideDir }); len(leaks) > 0 {
			t.Errorf("the host directory's descriptor leaked into the sandbox: %v\n%s", leaks, out)
		}
		if leaks := fds.leadingTo(func(target string) bool { return strings.HasPrefix(target, "/etc/") }); len(leaks) > 0 {
			t.Errorf("a descriptor of a system file bwrap copied leaked into the sandbox: %v\n%s", leaks, out)
		}
		// devsandbox holds the project's lock (package projlock) for the whole run: a
		// sandbox holding its descriptor could keep prune waiting or unlock it.
		if leaks := fds.leadingTo(func(target string) bool { return strings.Contains(target, "/devsandbox/"+projlock.Dir+"/") }); len(leaks) > 0 {
			t.Errorf("the project lock's descriptor leaked into the sandbox: %v\n%s", leaks, out)
		}
		refused(t, got, "", "write /proc/self/fd/3/via-fd", "write /proc/1/exe", "write "+hostTarget)
		for _, f := range []string{"via-fd", "via-root"} {
			if _, err := os.Stat(filepath.Join(outsideDir, f)); err == nil {
				t.Errorf("the sandbox wrote %s outside the project", f)
			}
		}
	})
}

// Switching the sandbox off from inside: a sandboxed agent rewrites the settings that
// confine it, to run unconfined next time (Claude Code CVE-2026-25725: a missing
// .claude/settings.json created from inside its bubblewrap sandbox). Here: the project
// file, devsandbox's user config as the sandbox sees it, and devsandbox run inside
// with --mode=off. None reaches the host.
func TestBypassSwitchOff(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		bin, err := os.ReadFile(it.bin)
		if err != nil {
			t.Fatal(err)
		}
		p.write("proj/devsandbox", string(bin))
		if err := os.Chmod(p.path("proj/devsandbox"), 0o755); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(it.home, "it-escaped-"+filepath.Base(p.root))
		defer os.Remove(marker)
		r := p.sandbox(iso, nil, `
			printf '[sandbox]\nmode = "off"\n' > .devsandbox.toml 2>/dev/null && echo project-file-written
			mkdir -p ~/.config/devsandbox && printf '[sandbox]\nmode = "off"\n' > ~/.config/devsandbox/config.toml && echo user-config-written
			./devsandbox --isolator=bwrap --mode=off -- touch `+marker+` 2>/dev/null
			true`)
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("devsandbox --mode=off inside the sandbox wrote to the host home")
		}
		// The next run is sandboxed all the same: the host home stays out of reach.
		r = p.sandbox(iso, nil, "touch "+marker+" 2>/dev/null; echo ran")
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the next run was not sandboxed:\n%s", r)
		}
		if r.code != 0 && r.code != 125 {
			t.Fatalf("the next run: %s", r)
		}
	})
}

// A fork storm stops at the sandbox's process limit, and the user's other processes
// on the host can still start (the kernel's RLIMIT_NPROC counts the sandbox's own
// user namespace on bwrap and krun; a pids cgroup on docker).
func TestBypassForkStorm(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--pids=64", "--", probe, "forkstorm", "500")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		lr, release := started(t, cmd)
		line := lr.waitFor("forkstorm")
		lr.waitFor("HOLD")
		// While the storm holds its processes, the user starts one on the host.
		host := exec.Command("/bin/true")
		host.SysProcAttr = &syscall.SysProcAttr{}
		if it.asOther {
			host.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}
		}
		if err := host.Run(); err != nil {
			t.Errorf("the user could not start a process on the host during the storm: %v", err)
		}
		release()
		_ = cmd.Wait()
		var forked int
		var why string
		if _, err := fmt.Sscanf(line, "forkstorm started %d refused %s", &forked, &why); err != nil {
			t.Fatalf("%q: %v\n%s", line, err, stderr.String())
		}
		if forked >= 64 || why != "EAGAIN" {
			t.Errorf("the storm started %d processes (refused: %s), want fewer than the limit of 64, then EAGAIN", forked, why)
		}
	})
}

// The default process limit is in force on every isolator (4096 tasks).
func TestDefaultPidsLimit(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		out := p.mustSandbox(iso, nil, `
			awk '/Max processes/ {print "rlimit " $3 " " $4}' /proc/self/limits
			for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max; do [ -r $f ] && echo "cgroup $(cat $f)"; done
			true`)
		if !strings.Contains(out, "rlimit 4096 4096") && !strings.Contains(out, "cgroup 4096") {
			t.Errorf("no process limit of 4096 in the sandbox:\n%s", out)
		}
	})
}

// A memory hog is stopped at limits.memory, and devsandbox says why after the run
// (the exit status stays the command's, 137). Where the limit cannot be enforced
// (bwrap without a delegated cgroup or systemd user manager, rootless podman on
// cgroup v1), the run fails before the command starts (125).
func TestBypassMemoryHog(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		r := p.sandbox(iso, []string{"--memory=64m"}, probe+" memhog 512")
		switch r.code {
		case 137:
			if !strings.Contains(r.stderr, "the sandbox ran out of memory (limit 64 MiB)") {
				t.Errorf("an out-of-memory kill without the message:\n%s", r)
			}
			if strings.Contains(r.stdout, "memhog done") {
				t.Errorf("the hog got all its memory:\n%s", r)
			}
		case 125:
			if strings.Contains(r.stdout, "memhog") || !strings.Contains(r.stderr, "limits.memory") {
				t.Errorf("a refused limit must stop the run before the command, naming limits.memory:\n%s", r)
			}
		default:
			t.Errorf("memory hog: %s", r)
		}
	})
}

// DNS as a side channel: data carried out in the names of DNS queries (Claude Code
// CVE-2025-55284; coder/httpjail#53). In none and proxy modes the sandbox sends no
// datagram anywhere (the proxy refuses denied names before resolving them: its unit
// tests); here a DNS server in a test namespace must receive nothing.
func TestBypassDNSSideChannel(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	got := make(chan string, 16)
	ln := listenUDPIn(t, o.ns, o.addr+":53", got)
	defer ln()
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		for _, mode := range []string{"none", "proxy"} {
			out := p.mustSandbox(iso, []string{"--egress=" + mode}, probe+" udp "+o.addr+":53 leak-"+iso+"-"+mode+
				"; getent hosts leak-"+iso+"-"+mode+".example >/dev/null && echo resolved; true")
			if strings.Contains(out, "resolved") || probeLines(out)["udp "+o.addr+":53"] == "ok" {
				t.Errorf("%s: a datagram left the sandbox:\n%s", mode, out)
			}
		}
	})
	select {
	case q := <-got:
		t.Errorf("the DNS server outside received %q", q)
	default:
	}
}

// listenUDPIn receives datagrams on addr inside the network namespace ns (see
// listenIn) and sends their payloads on got; the returned function stops it.
func listenUDPIn(t *testing.T, ns, addr string, got chan<- string) func() {
	t.Helper()
	pc, err := inNetns(ns, func() (net.PacketConn, error) { return net.ListenPacket("udp4", addr) })
	if err != nil {
		t.Fatalf("listening on udp %s in %s: %v", addr, ns, err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return func() { pc.Close() }
}

// TestBypassICMPAndUDPBeyondRules sends what a TCP-only check misses from each egress
// mode that filters: an ICMP echo (a raw socket where the sandbox may open one, else a
// ping socket) and UDP datagrams to a port no entry names, towards an outside host in
// a test namespace, and in allowlist mode with that host's TCP/UDP port 8080 allowed.
// No echo may come back and no datagram arrive: none and proxy have no route out, and
// allowlist's firewall opens only the named port (an entry with a port names TCP and
// UDP to it, never ICMP).
func TestBypassICMPAndUDPBeyondRules(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	got := make(chan string, 64)
	defer listenUDPIn(t, o.ns, o.addr+":9999", got)()
	// The outside host answers pings: checked from the host, so a refused echo below
	// is the sandbox's rules, not a silent host.
	if out, err := exec.Command("busybox", "ping", "-c", "1", "-W", "2", o.addr).CombinedOutput(); err != nil {
		t.Fatalf("the outside host does not answer a ping from the host: %v\n%s", err, out)
	}
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		probe := p.installProbe()
		for _, flags := range [][]string{{"--egress=none"}, {"--egress=proxy"}, {"--egress=allowlist", "--allow", o.addr + ":8080"}} {
			tag := iso + "-" + strings.TrimPrefix(flags[0], "--egress=")
			out := p.mustSandbox(iso, flags, probe+" ping "+o.addr+"; "+probe+" udp "+o.addr+":9999 "+tag)
			lines := probeLines(out)
			if lines["ping "+o.addr] == "ok" {
				t.Errorf("%s: an ICMP echo reached the outside host and came back:\n%s", tag, out)
			}
			if lines["udp "+o.addr+":9999"] == "ok" {
				t.Logf("%s: the datagram was sent (the listener says whether it arrived)", tag)
			}
		}
		if iso == localDocker {
			// The control: the probe's echo does come back where the network is
			// open (the engine lets a container's users open ping sockets).
			out := p.mustSandbox(iso, []string{"--egress=open"}, probe+" ping "+o.addr)
			if probeLines(out)["ping "+o.addr] != "ok" {
				t.Errorf("open: the probe's echo did not come back, so the refusals above prove nothing:\n%s", out)
			}
		}
	})
	select {
	case q := <-got:
		t.Errorf("the outside host received the datagram %q", q)
	default:
	}
}
