package docker

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// namedListener listens on the socket path it is given and says "ready".
const namedListener = `
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("ready", flush=True)
sys.stdin.read()
`

// listenAs starts python3 under the program name name (a link: the kernel names
// the process after the file it ran) listening on a socket in a temp dir, and
// returns the socket's address.
func listenAs(t *testing.T, name string) Address {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3")
	}
	// The interpreter itself, not a launcher script (pyenv's shims) that would
	// dispatch on the link's name.
	real, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("finding python3's executable: %v", err)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, name)
	if err := os.Symlink(strings.TrimSpace(string(real)), prog); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	cmd := exec.Command(prog, "-c", namedListener, sock)
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
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the listener named %s did not start: %q %v", name, line, err)
	}
	return Address{Host: "unix://" + sock}
}

// connect refuses podman's service listening on the engine's socket, told by the
// pinned socket's listener (Address.PodmanService) before any request: root's
// podman too, whose version no run asks (TestPodmanServiceEngine covers the user's
// podman). dockerd listening is not refused, and is taken for Docker's API
// (Address.EngineListens: a client speaking a recorded version need not wait for
// the ping).
func TestConnectRefusesPodmanByListener(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool
	}{{"podman", true}, {"dockerd", false}} {
		ctx, cancel := context.WithCancel(context.Background())
		c, a, err := connect(ctx, listenAs(t, tc.name))
		if !tc.refused {
			if err != nil {
				t.Errorf("%s: connect = %v, want a connection", tc.name, err)
			} else {
				if !a.EngineListens() || a.PodmanService() {
					t.Errorf("%s: EngineListens %v, PodmanService %v; want dockerd's socket told", tc.name, a.EngineListens(), a.PodmanService())
				}
				cancel() // the listener never answers the ping
				_ = c.Close()
			}
			cancel()
			continue
		}
		cancel()
		if _, ok := refused(err); !ok || !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), "Podman") || !strings.Contains(err.Error(), "the command did not run") {
			t.Errorf("%s: connect = %v; want it refused as podman's Docker-compatible API", tc.name, err)
		}
		if a.PodmanService() != true || a.DialPath() != "" {
			t.Errorf("%s: want the listener told as podman's and its pinned socket closed (DialPath %q)", tc.name, a.DialPath())
		}
	}
}
