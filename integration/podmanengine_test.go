//go:build integration

package integration

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPodmanServiceEngine: DOCKER_HOST at podman's Docker-compatible service
// (`podman system service`, started here as the test user). Its listener is podman
// itself (not conmon): the user's, in this machine's root directory (its mount
// namespace is rootless podman's own), so it counts as an engine that binds this
// machine's files, and doctor's engine row names it. The docker isolator does not
// speak podman's API (images load, users map and mounts work differently): with the
// image in podman's storage, a run is refused (125) naming podman and the other
// isolators before anything reaches the service. On base, the listener counted as a
// relay: the run took the remote path, skipped the check of an engine of the user's
// own, and, when the launch went ahead (a throwaway home by hand, an overlay store),
// failed on loading the derived image ("committing it: Error response from daemon:
// Decode(): EOF"); doctor's row did not name the listener.
func TestPodmanServiceEngine(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, localDocker)
	ip := newIsolatedPodman(t)
	const img = "devsandbox-test/busybox:1"
	tar := filepath.Join(ip.dir, "busybox.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, img).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v: %s", img, err, out)
	}
	if err := os.Chown(tar, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	ip.podman(t, "load", "-i", tar)
	p := newProject(t)
	env := []string{"DOCKER_HOST=unix://" + ip.sock}
	r := run(t, p.dir, env, "", "--isolator=docker", "--image="+img, "--egress=none", "--", "/bin/sh", "-c", "echo ran")
	want := "the engine at unix://" + ip.sock + " is Podman"
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "Docker-compatible API, which the docker isolator does not support") || !strings.Contains(r.stderr, "--isolator krun") || strings.Contains(r.stderr, "preparing the image") {
		t.Errorf("a docker run on podman's service with the image in its storage: want it refused (125) before the image is prepared, naming podman and the other isolators:\n%s", r)
	}
	if left := ip.podman(t, "ps", "-a", "-q"); left != "" {
		t.Errorf("the refused run left containers in podman: %s", left)
	}
	if imgs := ip.podman(t, "images", "-q", "--filter", "reference=devsandbox/*"); imgs != "" {
		t.Errorf("the refused run made images in podman: %s", imgs)
	}
	r = run(t, p.dir, env, "", "--isolator=docker", "--image="+img, "doctor")
	for _, w := range []string{`is "podman" (pid `, "podman's Docker-compatible service on this machine", "Docker-compatible API, which the docker isolator does not support"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("doctor on podman's service: want the docker engine row to say %q:\n%s", w, r)
		}
	}
}

// TestPodmanReachedAnyWayRefused: podman's Docker-compatible service reached where
// its listener cannot be asked (not this machine's socket of podman's): at a
// tcp:// address (podman itself listening on 127.0.0.1), and through a relay's Unix
// socket (the test's process, as ssh -L or socat would be). The run's negotiating
// ping reads what the engine says of itself (Podman's headers): the run is refused
// (125) naming podman, before anything is made in it (no container, volume or
// image). On base, a tcp:// podman with the image went on to prepare the image and
// failed there ("committing it: Error response from daemon: Decode(): EOF"), leaving
// the run's content volume in podman.
func TestPodmanReachedAnyWayRefused(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, localDocker)
	ip := newIsolatedPodman(t)
	const img = "devsandbox-test/busybox:1"
	tar := filepath.Join(ip.dir, "busybox.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, img).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v: %s", img, err, out)
	}
	if err := os.Chown(tar, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	ip.podman(t, "load", "-i", tar)
	tcp := ip.listenTCP(t)
	for _, tc := range []struct{ name, host string }{
		{"tcp", tcp},
		{"relay", "unix://" + relayTo(t, ip.sock)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			// Config, state, data and cache of its own, as on a first run.
			env := []string{"DOCKER_HOST=" + tc.host}
			for _, x := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"} {
				d := filepath.Join(ip.dir, tc.name, strings.ToLower(x))
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(filepath.Dir(d), it.uid, it.gid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(d, it.uid, it.gid); err != nil {
					t.Fatal(err)
				}
				env = append(env, x+"="+d)
			}
			for _, args := range [][]string{
				{"--egress=none"},
				{"--egress=proxy", "--keep-container"}, // the endpoint volume is made ahead
			} {
				// The name podman stores it under.
				args = append([]string{"--isolator=docker", "--image=localhost/" + img}, args...)
				r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", "echo ran")...)
				want := "the engine at " + tc.host + " is Podman 4."
				// The run's own refusal, before it asks for anything with a side
				// effect; not Check's, after the preparation of the image failed.
				const own = "; the command did not run. To fix: run with --isolator krun"
				if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, own) || strings.Contains(r.stderr, "preparing the image") {
					t.Errorf("%v on podman's service at %s, the image in its storage: want the run refused (125) before the image is prepared, naming podman (%q, %q):\n%s", args, tc.host, want, own, r)
				}
			}
			for what, args := range map[string][]string{
				"containers": {"ps", "-a", "-q"},
				"volumes":    {"volume", "ls", "-q"},
				"images":     {"images", "-q", "--filter", "reference=devsandbox/*"},
			} {
				if left := ip.podman(t, args...); left != "" {
					t.Errorf("the refused runs left %s in podman: %s", what, left)
				}
			}
		})
	}
}

// listenTCP starts a second service of the isolated storage on a TCP port of
// 127.0.0.1 (podman system service tcp://...) and returns its address once it
// answers; it stops with the test.
func (ip *isolatedPodman) listenTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	svc := ip.command(append(slices.Clone(ip.flags), "system", "service", "--time=0", "tcp://"+addr)...)
	svc.SysProcAttr.Setpgid = true
	log, err := os.Create(filepath.Join(ip.dir, "service-tcp.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	svc.Stdout, svc.Stderr = log, log
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-svc.Process.Pid, syscall.SIGKILL)
		_ = svc.Wait()
	})
	// Wait for the condition (it accepts), not for a time; the deadline bounds it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "tcp://" + addr
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(ip.dir, "service-tcp.log"))
			t.Fatalf("the isolated podman service did not listen on %s: %s", addr, b)
		}
	}
}
