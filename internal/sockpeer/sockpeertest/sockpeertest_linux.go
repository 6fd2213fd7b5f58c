package sockpeertest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listener chroots into argv[1], listens at /argv[2], says "ready PID" and holds the
// socket until its stdin ends. With argv[3] "orphan", the listening process forks a
// child that keeps the socket and exits itself: the socket's credentials still name
// the exited process's pid (PID), which the kernel may give to any new process.
const listener = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
os.chroot(sys.argv[1])
os.chdir("/")
s.bind("/" + sys.argv[2])
s.listen(8)
me = os.getpid()
if sys.argv[3] == "orphan" and os.fork() != 0:
    os._exit(0)
print("ready", me, flush=True)
sys.stdin.read()
os._exit(0)
`

// pidTaker makes a process whose pid is argv[1] (ns_last_pid, root's), in this root
// directory, called argv[2] when given (its comm): it prints "got" and holds until
// its stdin ends.
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
        if len(sys.argv) > 2:
            with open("/proc/self/comm", "w") as f:
                f.write(sys.argv[2])
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

// Chrooted starts a process of this user listening at NAME in the directory root,
// after making root its root directory, and returns the socket's path here
// (root/NAME). It holds the socket until the test ends. The test skips unless it
// runs as root (chroot), and without python3 (failing when CI is set).
func Chrooted(t testing.TB, root, name string) string {
	t.Helper()
	sock, _ := listen(t, root, name, "hold")
	return sock
}

// Orphaned is Chrooted whose listening process leaves the socket to a child and
// exits: it returns the socket's path here and the exited process's pid, free for
// the kernel to give to another.
func Orphaned(t testing.TB, root, name string) (sock, pid string) {
	t.Helper()
	return listen(t, root, name, "orphan")
}

func listen(t testing.TB, root, name, mode string) (sock, pid string) {
	t.Helper()
	out, cmd := start(t, listener, root, name, mode)
	line, err := out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] != "ready" {
		t.Fatalf("the listener in another root did not start: %q %v", line, err)
	}
	if mode == "orphan" {
		_ = cmd.Wait() // the process that listened is gone, its pid free; its child holds the socket
	}
	return filepath.Join(root, name), f[1]
}

// TakePid gives pid to a new process of this root directory, held until the test
// ends. The test skips when another process takes the pid first.
func TakePid(t testing.TB, pid string) {
	t.Helper()
	TakePidAs(t, pid)
}

// TakePidAs is TakePid whose process is called name (a dockerd, a podman).
func TakePidAs(t testing.TB, pid string, name ...string) {
	t.Helper()
	out, _ := start(t, pidTaker, append([]string{pid}, name...)...)
	if line, err := out.ReadString('\n'); err != nil || line != "got\n" {
		t.Skipf("could not give pid %s to a process of this root directory (%q %v): another process took it", pid, line, err)
	}
}

// start runs python3 with script and args; its stdin ends when the test does.
func start(t testing.TB, script string, args ...string) (*bufio.Reader, *exec.Cmd) {
	t.Helper()
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
