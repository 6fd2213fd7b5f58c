//go:build integration

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// throwawayEngine is a dockerd of the test's own, for what must not happen to an engine
// other runs use (a restart mid-run): its data, exec root, pid file and Unix socket in
// a temporary directory, a bridge and a subnet of its own, no iptables rules (as the
// stand-in), and the docker group may use its socket (the test user is in it). It
// shares this machine's file system, as the local engine does. Cleanup stops it and
// removes everything, also when the test fails.
type throwawayEngine struct {
	dir, bridge, host string
	args              []string
	cmd               *exec.Cmd
	exited            chan struct{}
}

// newThrowawayEngine starts a throwaway engine and copies images into it from this
// machine's engine. It needs root and dockerd: it skips without them, and fails in CI.
func newThrowawayEngine(t *testing.T, images ...string) *throwawayEngine {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("dockerd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("dockerd is required in CI: %v", err)
		}
		t.Skip("dockerd not installed")
	}
	dir, err := os.MkdirTemp("/var/tmp", "dsbte-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	te := &throwawayEngine{dir: dir, bridge: "dsbte" + hex.EncodeToString(rnd[:]), host: "unix://" + filepath.Join(dir, "sock")}
	t.Cleanup(func() { te.remove(t) })
	if err := te.addBridge(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	te.args = []string{"--config-file", filepath.Join(dir, "daemon.json"), "--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "x"), "--pidfile", filepath.Join(dir, "pid"), "-H", te.host, "--group", "docker",
		"--bridge=" + te.bridge, "--iptables=false", "--ip-masq=false", "--shutdown-timeout=2"}
	te.start(t)
	for _, img := range images {
		save := exec.Command("docker", "save", img)
		load := te.command("load", "-q")
		pipe, err := save.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		load.Stdin = pipe
		if err := save.Start(); err != nil {
			t.Fatal(err)
		}
		out, lerr := load.CombinedOutput()
		if err := save.Wait(); err != nil || lerr != nil {
			t.Fatalf("copying %s into the throwaway engine: %v %v: %s", img, err, lerr, out)
		}
	}
	return te
}

// addBridge creates the engine's bridge on a 172.31.N.0/24 no interface of this machine
// is on (concurrent runs pick their own).
func (te *throwawayEngine) addBridge() error {
	for range 20 {
		var b [1]byte
		_, _ = rand.Read(b[:])
		subnet := fmt.Sprintf("172.31.%d", b[0])
		if out, err := exec.Command("ip", "-o", "addr", "show", "to", subnet+".0/24").Output(); err != nil || len(out) > 0 {
			continue
		}
		for _, args := range [][]string{
			{"link", "add", te.bridge, "type", "bridge"},
			{"addr", "add", subnet + ".1/24", "dev", te.bridge},
			{"link", "set", te.bridge, "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		return nil
	}
	return fmt.Errorf("no free 172.31.N.0/24 for the throwaway engine's bridge")
}

// start starts dockerd and returns once it answers (within 60 s).
func (te *throwawayEngine) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(te.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	te.cmd = exec.Command("dockerd", te.args...)
	te.cmd.Stdout, te.cmd.Stderr = log, log
	te.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := te.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	te.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(te.cmd, te.exited)
	deadline := time.Now().Add(60 * time.Second)
	for !te.answers() {
		select {
		case <-te.exited:
			t.Fatalf("the throwaway engine exited:\n%s", te.logTail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the throwaway engine did not answer within 60s:\n%s", te.logTail())
		}
		runtimeYield()
	}
}

// answers says whether the engine answers its ping (GET /_ping: OK) on its socket.
// The wait for a starting engine asks it every 20 ms: a docker CLI started that often
// took a processor of two from the engine it waited for, and the check is the same
// request the CLI's first one is.
func (te *throwawayEngine) answers() bool {
	c, err := net.DialTimeout("unix", strings.TrimPrefix(te.host, "unix://"), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && string(body) == "OK"
}

// stop stops dockerd (SIGTERM: it stops its containers, as on a host's shutdown) and
// returns once it exited; after 30 s it is killed.
func (te *throwawayEngine) stop(t *testing.T) {
	t.Helper()
	if te.cmd == nil {
		return
	}
	_ = te.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-te.exited:
	case <-time.After(30 * time.Second):
		_ = te.cmd.Process.Kill()
		<-te.exited
		t.Errorf("the throwaway engine did not stop within 30s:\n%s", te.logTail())
	}
	te.cmd = nil
}

// restart stops and starts the engine, as `systemctl restart docker` does.
func (te *throwawayEngine) restart(t *testing.T) {
	t.Helper()
	te.stop(t)
	te.start(t)
}

// remove stops the engine and removes its bridge and directory.
func (te *throwawayEngine) remove(t *testing.T) {
	te.stop(t)
	// A killed dockerd leaves its containerd.
	if b, err := os.ReadFile(filepath.Join(te.dir, "x", "containerd", "containerd.pid")); err == nil {
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = exec.Command("ip", "link", "del", te.bridge).Run()
	// Mounts a killed engine left would make RemoveAll fail: unmount them first.
	_ = exec.Command("sh", "-c", `grep -o " $1[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l`, "sh", te.dir).Run()
	if err := os.RemoveAll(te.dir); err != nil {
		t.Errorf("removing the throwaway engine's directory: %v", err)
	}
}

// command is the docker CLI (as root) against the engine.
func (te *throwawayEngine) command(args ...string) *exec.Cmd {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+te.host)
	return cmd
}

// docker runs the docker CLI against the engine and returns its trimmed output.
func (te *throwawayEngine) docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := te.command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s (the throwaway engine): %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// objects lists the containers and volumes labelled with the project's id.
func (te *throwawayEngine) objects(t *testing.T, p *project) (containers, volumes []string) {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	containers = strings.Fields(te.docker(t, "ps", "-a", "--format", "{{.Names}}", "--filter", "label=dev.devsandbox.project="+id))
	volumes = strings.Fields(te.docker(t, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+id))
	return containers, volumes
}

func (te *throwawayEngine) logTail() string {
	b, _ := os.ReadFile(filepath.Join(te.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
