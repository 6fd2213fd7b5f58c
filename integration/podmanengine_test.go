//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
