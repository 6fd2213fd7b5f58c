package krun

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sockpeer/sockpeertest"
	"github.com/devsandbox/devsandbox/isolator"
)

// pinService takes a socket whose listener shares this process's root, and the path
// it returns reaches that socket even once another is put at the name; a name that
// is not a socket, or a link, is refused. (A listener in another root, a sandbox's,
// is TestPinServiceRefusesListenerInAnotherRoot's, and with a real sandbox
// TestKrunTakesNoPlantedService's.)
func TestPinService(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "podman.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pinned, f, err := pinService(sock)
	if err != nil {
		t.Fatalf("a listener of this process: %v", err)
	}
	defer f.Close()
	// Swapped: the pinned path still reaches the first listener.
	if err := os.Rename(sock, sock+".old"); err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	go func() {
		if c, err := l2.Accept(); err == nil {
			t.Error("the pinned path reached the socket swapped in at the name")
			c.Close()
		}
	}()
	c, err := net.Dial("unix", pinned)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if a, err := l.Accept(); err != nil {
		t.Fatal(err)
	} else {
		a.Close()
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pinService(file); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), file+", where podman's API socket should be, is not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pinService(link); err == nil {
		t.Error("a link at the socket's name was followed")
	}
}

// pinService refuses a listener whose root directory is not this process's (a
// sandbox's listener planted at the service's socket), naming it.
func TestPinServiceRefusesListenerInAnotherRoot(t *testing.T) {
	sock := sockpeertest.Chrooted(t, t.TempDir(), "podman.sock")
	_, f, err := pinService(sock)
	if err == nil {
		f.Close()
		t.Fatalf("pinService took the listener in another root directory at %s for podman's service", sock)
	}
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "is not podman's service") {
		t.Errorf("pinService = %v, want the refusal of a listener in another root", err)
	}
}

// pinService refuses a sandbox's listener whose process left the socket to a child
// and exited, its pid (which the socket's credentials keep) now a process's of this
// root directory: the root read at that pid is not the listener's.
func TestPinServiceRefusesListenerWhosePidWasReused(t *testing.T) {
	sock, pid := sockpeertest.Orphaned(t, t.TempDir(), "podman.sock")
	sockpeertest.TakePid(t, pid)
	_, pf, err := pinService(sock)
	if err == nil {
		pf.Close()
		t.Fatalf("pinService took the listener in another root directory at %s for podman's service: its exited process's pid %s now names a process of this root directory", sock, pid)
	}
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("pinService = %v, want the refusal of a listener that has exited", err)
	}
}

// listenerPid names the process listening on a socket (here the test's own), and
// fails for a socket nobody listens on.
func TestListenerPid(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "podman.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := listenerPid(sock); pid != os.Getpid() || err != nil {
		t.Errorf("listenerPid of the test's own listener = %d, %v; want %d", pid, err, os.Getpid())
	}
	l.Close()
	if pid, err := listenerPid(sock); err == nil {
		t.Errorf("listenerPid of a socket nobody listens on = %d, want an error", pid)
	}
}

// fakeSupervisor is devsandbox's supervisor as stopService sees it (argv "python3
// supervise SOCK", run from a directory holding this script as "supervise"): its
// child listens at SOCK, says "ready PID" and ends on SIGTERM; the supervisor then
// says "gone" and, with LINGER set, lingers until its stdin ends, as a supervisor
// slow to end does.
const fakeSupervisor = `
import os, signal, socket, sys
pid = os.fork()
if pid == 0:
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[1])
    s.listen(8)
    print("ready", os.getpid(), flush=True)
    while True:
        signal.pause()
os.waitpid(pid, 0)
print("gone", flush=True)
if os.environ.get("LINGER"):
    sys.stdin.read()
`

// startFakeSupervisor starts fakeSupervisor (lingering or not) and returns the
// socket its child listens at, the child's pid and the supervisor's output after
// "ready". It skips without root (ns_last_pid, for the tests that need it) and
// without python3 (failing when CI is set).
func startFakeSupervisor(t *testing.T, linger bool) (sock string, pid int, out *bufio.Reader) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a pid to another process (ns_last_pid) needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SuperviseArg), []byte(fakeSupervisor), 0o600); err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "podman.sock")
	cmd := &exec.Cmd{Path: py, Args: []string{"python3", SuperviseArg, sock}, Dir: dir, Env: os.Environ(), Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if linger {
		cmd.Env = append(cmd.Env, "LINGER=1")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the service a refusing stopService left
		_ = cmd.Wait()
	})
	out = bufio.NewReader(outPipe)
	line, err := out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] != "ready" {
		t.Fatalf("the fake service did not start: %q %v", line, err)
	}
	if pid, err = strconv.Atoi(f[1]); err != nil {
		t.Fatal(err)
	}
	return sock, pid, out
}

// stopService ends the service of devsandbox's supervisor and returns once the
// supervisor is gone.
func TestStopService(t *testing.T) {
	sock, pid, out := startFakeSupervisor(t, false)
	if err := stopService(sock, pid); err != nil {
		t.Fatalf("stopService = %v", err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "gone\n" {
		t.Fatalf("the fake service did not end on stopService's SIGTERM: %q %v", line, err)
	}
	if _, err := out.ReadString('\n'); err == nil {
		t.Error("stopService returned while the supervisor still ran")
	}
}

// stopService refuses a listener that is not the pid it was given (the service whose
// limits were read), and one whose parent is not devsandbox's supervisor for the
// socket; it signals neither.
func TestStopServiceRefusesOthers(t *testing.T) {
	sock, pid, _ := startFakeSupervisor(t, false)
	if err := stopService(sock, pid+1); err == nil || !strings.Contains(err.Error(), "is not the podman service whose limits devsandbox read") {
		t.Errorf("stopService with another pid than the listener's = %v, want it refused", err)
	}
	own := filepath.Join(t.TempDir(), "podman.sock")
	l, err := net.Listen("unix", own)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := stopService(own, os.Getpid()); err == nil || !strings.Contains(err.Error(), "is not devsandbox's supervisor") {
		t.Errorf("stopService of the test's own listener = %v, want it refused", err)
	}
	if !processLives(pid) {
		t.Error("stopService signalled the service it refused to stop")
	}
}

// stopService signals only the service it judged: once that service has ended on
// its SIGTERM, the later SIGKILL (while the supervisor has not yet ended) must not
// reach a process of the host that took the service's pid meanwhile.
func TestStopServiceSignalsNoReusedPid(t *testing.T) {
	sock, pid, out := startFakeSupervisor(t, true)
	done := make(chan error, 1)
	go func() { done <- stopService(sock, pid) }()
	if line, err := out.ReadString('\n'); err != nil || line != "gone\n" {
		t.Fatalf("the fake service did not end on stopService's SIGTERM: %q %v", line, err)
	}
	sockpeertest.TakePid(t, strconv.Itoa(pid))
	err := <-done // the supervisor lingers: stopService gives up after its 15 s
	if !processLives(pid) {
		t.Fatalf("stopService killed pid %d, a process of the host that took the pid after podman's service (stopped by it) ended; stopService = %v", pid, err)
	}
	if err == nil || !strings.Contains(err.Error(), "did not end within 15 s") {
		t.Errorf("stopService = %v, want the supervisor that did not end", err)
	}
}

// processLives reports whether pid is a process that has not exited (a zombie has).
func processLives(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return i >= 0 && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// serviceRlimits and serviceLimits read the limits of the process listening on the
// socket: a listener that left the socket to a child and exited, its pid (which the
// socket's credentials keep) now another process's, must not lend that process's
// limits to a container (what was read must be the listener's own, told through its
// pidfd).
func TestServiceLimitsOfNoReusedPid(t *testing.T) {
	sock, pid := sockpeertest.Orphaned(t, t.TempDir(), "podman.sock")
	sockpeertest.TakePid(t, pid)
	if l, err := serviceRlimits(sock); err == nil || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("serviceRlimits of a listener whose pid %s was reused = %v, %v; want a refusal saying it has exited", pid, l, err)
	}
	if _, hard, err := serviceLimits(sock); err == nil || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("serviceLimits of a listener whose pid %s was reused = %v, %v; want a refusal saying it has exited", pid, hard, err)
	}
}
