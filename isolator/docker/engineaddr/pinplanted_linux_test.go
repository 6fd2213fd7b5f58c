package engineaddr

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// chrootedListener listens on /docker.sock inside the directory it is given, after
// making that its root: a process of this user in another root directory, as a
// bwrap sandbox's listener is.
const chrootedListener = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
os.chroot(sys.argv[1])
os.chdir("/")
s.bind("/docker.sock")
s.listen(8)
print("ready", flush=True)
sys.stdin.read()
`

// Pin itself refuses a listener of this user in another root directory (a sandbox's,
// planted at the engine's socket), before any request goes to it: the check the
// docker isolator's every connection relies on, shown here by Pin and not only by
// listenerNotPlanted (TestListenerNotPlanted, a fake /proc).
func TestPinRefusesPlantedListener(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3")
	}
	root := t.TempDir()
	cmd := exec.Command(py, "-c", chrootedListener, root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the listener in another root did not start: %q %v", line, err)
	}
	sock := filepath.Join(root, "docker.sock")
	a, err := Address{Host: "unix://" + sock}.Pin()
	if err == nil {
		a.Unpin()
		t.Fatalf("Pin took the listener in another root directory at %s for the engine", sock)
	}
	if !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "runs in another root directory") {
		t.Errorf("Pin = %v; want ErrPlanted naming another root directory", err)
	}
	if a.Pinned() {
		t.Error("the refused address is still pinned")
	}

	// Positive control: the same listener code in this root directory is taken.
	own := listen(t)
	p, err := own.Pin()
	if err != nil {
		t.Fatalf("Pin of the test's own listener: %v", err)
	}
	p.Unpin()
}

// orphanedListener is chrootedListener whose listening process forks a child that
// keeps the socket and exits: the socket's credentials still name the exited
// process's pid, which the kernel may give to any new process. The child prints that
// pid and holds the socket until its stdin closes.
const orphanedListener = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
os.chroot(sys.argv[1])
os.chdir("/")
s.bind("/docker.sock")
s.listen(8)
me = os.getpid()
if os.fork() == 0:
    print("ready", me, flush=True)
    sys.stdin.read()
    os._exit(0)
os._exit(0)
`

// pidTaker makes a process whose pid is the one given (ns_last_pid, root's), in this
// root directory: it prints "got" and holds until its stdin closes.
const pidTaker = `
import os, sys
target = int(sys.argv[1])
for _ in range(5000):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(target - 1))
    pid = os.fork()
    if pid == 0:
        if os.getpid() != target:
            os._exit(0)
        print("got", flush=True)
        sys.stdin.read()
        os._exit(0)
    if pid == target:
        os.waitpid(pid, 0)
        sys.exit(0)
    os.waitpid(pid, 0)
print("missed", flush=True)
sys.exit(1)
`

// TestPinRefusesListenerWhosePidWasReused: a sandbox's listener (another root
// directory) hands its socket to a child and exits; its pid, which the socket's
// credentials keep, goes to a process of this user in this root directory (pid_max
// is 32768 on many hosts: a sandbox wraps it in well under a second). The root
// directory read at that pid is then not the listener's: Pin must not take it for
// an engine's.
func TestPinRefusesListenerWhosePidWasReused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot and ns_last_pid need root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3")
	}
	start := func(script string, args ...string) (*bufio.Reader, *exec.Cmd) {
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
		cmd.Stdin = inR
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		inR.Close()
		t.Cleanup(func() {
			inW.Close()
			if cmd.ProcessState == nil {
				_ = cmd.Wait()
			}
		})
		return bufio.NewReader(out), cmd
	}
	root := t.TempDir()
	out, listener := start(orphanedListener, root)
	line, err := out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] != "ready" {
		t.Fatalf("the listener in another root did not start: %q %v", line, err)
	}
	_ = listener.Wait() // the process that listened is gone, its pid free; its child holds the socket
	taken, _ := start(pidTaker, f[1])
	if line, err := taken.ReadString('\n'); err != nil || line != "got\n" {
		t.Skipf("could not give pid %s to a process of this root directory (%q %v): another process took it", f[1], line, err)
	}
	sock := filepath.Join(root, "docker.sock")
	a, err := Address{Host: "unix://" + sock}.Pin()
	if err == nil {
		a.Unpin()
		t.Fatalf("Pin took the listener in another root directory at %s for the engine: its exited process's pid %s now names a process of this root directory", sock, f[1])
	}
	if !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("Pin = %v; want ErrPlanted saying the listener has exited", err)
	}
}
