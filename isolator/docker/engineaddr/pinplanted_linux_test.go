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
