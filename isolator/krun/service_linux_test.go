package krun

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

// chrootListener, run as root, listens at /podman.sock inside the root argv[1], says
// "ready", and holds the socket until its stdin ends: a process in another root
// directory, as a sandbox's is.
const chrootListener = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
os.chroot(sys.argv[1])
os.chdir("/")
s.bind("/podman.sock")
s.listen(8)
print("ready", flush=True)
sys.stdin.read()
`

// pinService refuses a listener whose root directory is not this process's (a
// sandbox's listener planted at the service's socket), naming it.
func TestPinServiceRefusesListenerInAnotherRoot(t *testing.T) {
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
	cmd := exec.Command(py, "-c", chrootListener, root)
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
	sock := filepath.Join(root, "podman.sock")
	_, f, err := pinService(sock)
	if err == nil {
		f.Close()
		t.Fatalf("pinService took the listener in another root directory at %s for podman's service", sock)
	}
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "is not podman's service") {
		t.Errorf("pinService = %v, want the refusal of a listener in another root", err)
	}
}

// orphanedListener is chrootListener whose listening process leaves the socket to a
// child and exits; the child prints the exited process's pid and holds the socket
// until its stdin ends.
const orphanedListener = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
os.chroot(sys.argv[1])
os.chdir("/")
s.bind("/podman.sock")
s.listen(8)
me = os.getpid()
if os.fork() == 0:
    print("ready", me, flush=True)
    sys.stdin.read()
    os._exit(0)
os._exit(0)
`

// pidTaker, run as root, makes a process of this root directory whose pid is
// argv[1] (ns_last_pid): it prints "got" and holds until its stdin ends.
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

// pinService refuses a sandbox's listener whose process left the socket to a child
// and exited, its pid (which the socket's credentials keep) now a process's of this
// root directory: the root read at that pid is not the listener's.
func TestPinServiceRefusesListenerWhosePidWasReused(t *testing.T) {
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
	sock := filepath.Join(root, "podman.sock")
	_, pf, err := pinService(sock)
	if err == nil {
		pf.Close()
		t.Fatalf("pinService took the listener in another root directory at %s for podman's service: its exited process's pid %s now names a process of this root directory", sock, f[1])
	}
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("pinService = %v, want the refusal of a listener that has exited", err)
	}
}
