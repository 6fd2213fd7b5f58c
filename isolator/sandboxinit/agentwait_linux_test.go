package sandboxinit

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
)

// The container init starts the command only once the ssh agent's socket its
// manifest names is served (the agent's exec is another than the session's): a command that finds no served socket exits 9, which fails the test
// as soon as the wait is gone.
func TestContainerWaitsForAgent(t *testing.T) {
	// The socket's directory is the carrier's, another uid than the init's
	// (agentDirApart): only root can give it one.
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent's directory must be another uid's than the init's")
	}
	dir := filepath.Join(t.TempDir(), "agent")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "a.sock")
	// The container init checks it holds no capability and cannot gain one.
	priv := []string{"--no-new-privs"}
	if os.Geteuid() == 0 {
		priv = append(priv, "--bounding-set=-all", "--inh-caps=-all")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("setpriv (util-linux) is needed: ", err)
		}
		t.Skip("setpriv (util-linux) is needed: ", err)
	}
	cmd := exec.Command(setpriv, append(priv, os.Args[0], "-test.run=^$")...)
	cmd.Env = append(os.Environ(), helperEnv+"=container", wire.ManifestEnv+"="+(&wire.Manifest{Agent: sock}).Encode(),
		`HELPER_SCRIPT=test -S `+sock+` && test "$(stat -c %a `+sock+`)" = 666 || { echo the command started before the socket was served; exit 9; }`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The init waits once it watches the socket's directory: serve the socket only
	// then, so a command started without waiting finds none.
	for !watching(cmd.Process.Pid) {
		select {
		case err := <-exited:
			t.Fatalf("the init ended before the socket was served (%v): %s", err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	ln, err := sshagent.ListenCarried(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the command did not start within 10s of the socket being served: %s", out.String())
	}
}

// watching reports whether process pid holds an inotify descriptor.
func watching(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join(dir, e.Name())); l == "anon_inode:inotify" {
			return true
		}
	}
	return false
}

// A socket is served only once it is everyone's (ListenCarried's last step): one
// that is not yet, or a file, is waited past; the wait is bounded.
func TestWaitAgent(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sock, file, filepath.Join(dir, "missing")} {
		err := waitAgent(p, 20*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "was not served within") {
			t.Errorf("%s: %v, want not served", p, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- waitAgent(sock, 10*time.Second) }()
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The agent's directory must be neither the command's nor writable by others: a
// container whose carrier and command are one uid (a rootless engine's root, made
// before the carrier had a uid of its own) does not run the command.
func TestAgentDirApart(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	owner := os.Getuid()
	if err := agentDirApart(dir, owner+1); err != nil {
		t.Errorf("another uid's 0755 directory: %v, want nil", err)
	}
	if err := agentDirApart(dir, owner); err == nil || !strings.Contains(err.Error(), "is the command's to write") {
		t.Errorf("the command's own directory: %v, want refused", err)
	}
	for _, mode := range []os.FileMode{0o775, 0o757, 0o1777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := agentDirApart(dir, owner+1); err == nil {
			t.Errorf("a directory of mode %o: want refused", mode)
		}
	}
	if err := agentDirApart(filepath.Join(dir, "missing"), owner+1); err == nil || !strings.Contains(err.Error(), "the command did not run") {
		t.Errorf("a missing directory: %v, want refused", err)
	}
}

// A manifest that runs the command as the container's root (a rootless engine's, the
// user) is refused where that root is the host's: the init, run as the host's root
// with no capability and no_new_privs (as a rootful engine's container would run
// it), stops with 125 before the command.
func TestContainerRootRefusedAsHostRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs the host's root (the unit tests run as root in CI)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("setpriv (util-linux) is needed: ", err)
		}
		t.Skip("setpriv (util-linux) is needed: ", err)
	}
	cmd := exec.Command(setpriv, "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=container", wire.ManifestEnv+"="+(&wire.Manifest{ContainerRoot: true}).Encode(),
		`HELPER_SCRIPT=echo the command ran`)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || strings.Contains(string(out), "the command ran") || !strings.Contains(string(out), "the host's root") {
		t.Fatalf("the container's root as the host's root: %v: %s; want 125, the command not run, the reason named", err, out)
	}
	// The same init with no such manifest runs the command (the check is the
	// manifest's, not every root's).
	cmd = exec.Command(setpriv, "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=container", wire.ManifestEnv+"="+(&wire.Manifest{}).Encode(), `HELPER_SCRIPT=echo the command ran`)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "the command ran") {
		t.Fatalf("without ContainerRoot: %v: %s", err, out)
	}
}
