//go:build integration

package integration

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The image a docker sandbox runs is derived once from docker.image and cached by ID:
// two concurrent first runs both succeed, with one image made by one of them; a later
// run prepares nothing; a derived image removed behind devsandbox's back is made
// again; its labels name the base's ID; `sandboxes prune` names it once its base name
// names another image.
func TestDockerDerivedImage(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		var rnd [4]byte
		_, _ = rand.Read(rnd[:])
		// A base image of its own (a new ID), so the first run cannot hit the cache.
		base := "devsandbox-test/derive-" + hex.EncodeToString(rnd[:]) + ":1"
		cid := dockerAt(t, iso, "create", "devsandbox-test/busybox:1", "true")
		dockerAt(t, iso, "commit", "--change", "LABEL it.unique="+hex.EncodeToString(rnd[:]), "--change", "ENV GOMAXPROCS=5", cid, base)
		dockerAt(t, iso, "rm", cid)
		baseID := dockerAt(t, iso, "image", "inspect", "--format", "{{.Id}}", base)
		derived := func() []string {
			out := dockerAt(t, iso, "images", "-q", "--no-trunc", "--filter", "label=dev.devsandbox.base="+baseID)
			return strings.Fields(out)
		}
		t.Cleanup(func() {
			for _, id := range derived() {
				_ = dockerCmd(iso, "rmi", "-f", id).Run()
			}
			_ = dockerCmd(iso, "rmi", base).Run() // the name only, whatever it names now
			_ = dockerCmd(iso, "rmi", "-f", baseID).Run()
		})
		p := newProject(t)
		args := []string{"--isolator=" + iso, "--image=" + base, "--egress=none", "--", "/bin/sh", "-c", "cat /etc/passwd >/dev/null && echo ran"}
		var wg sync.WaitGroup
		rs := make([]result, 2)
		for i := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs[i] = run(t, p.dir, nil, "", args...)
			}()
		}
		wg.Wait()
		// One of them makes the image (under the build lock), the other waits and uses it.
		made := 0
		for _, r := range rs {
			if r.code != 0 || r.stdout != "ran\n" {
				t.Fatalf("a concurrent first run:\n%s", r)
			}
			if strings.Contains(r.stderr, "preparing the image "+base) {
				made++
			}
		}
		ids := derived()
		if len(ids) != 1 || made != 1 {
			t.Fatalf("derived images of %s: %q, made by %d of the 2 concurrent first runs; want one image, made by one", base, ids, made)
		}
		if l := dockerAt(t, iso, "image", "inspect", "--format", `{{index .Config.Labels "dev.devsandbox.base-ref"}} {{index .Config.Labels "dev.devsandbox.uid"}}`, ids[0]); l != base+" "+strconv.Itoa(it.uid) {
			t.Errorf("labels of the derived image: %q", l)
		}
		if r := run(t, p.dir, nil, "", args...); r.code != 0 || strings.Contains(r.stderr, "preparing") {
			t.Fatalf("a run with the image cached:\n%s", r)
		}
		// The image's own environment reaches the command of a kept container's
		// sessions, the first (which makes the container) and a warm one: the
		// session's init starts on one P only where nothing sets GOMAXPROCS.
		kept := []string{"--isolator=" + iso, "--image=" + base, "--keep-container", "--egress=none", "--", "/bin/sh", "-c", `echo "procs=${GOMAXPROCS-unset}"`}
		for _, which := range []string{"first", "warm"} {
			if r := run(t, p.dir, nil, "", kept...); r.code != 0 || r.stdout != "procs=5\n" {
				t.Fatalf("the %s kept session, the image setting GOMAXPROCS=5: want procs=5, got:\n%s", which, r)
			}
		}
		if r := run(t, p.dir, []string{"DOCKER_HOST=" + engineOf(iso)}, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("removing the kept container:\n%s", r)
		}
		for _, id := range ids {
			dockerAt(t, iso, "rmi", id)
		}
		if r := run(t, p.dir, nil, "", args...); r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, "preparing the image") {
			t.Fatalf("a run after the derived image was removed:\n%s", r)
		}
		ids = derived()
		if len(ids) != 1 {
			t.Fatalf("derived images after the rebuild: %q", ids)
		}
		// The base name now names another image: the derived one is stale.
		dockerAt(t, iso, "tag", "devsandbox-test/busybox:1", base)
		r := run(t, p.dir, []string{"DOCKER_HOST=" + engineOf(iso)}, "", "sandboxes", "prune", "--dry-run")
		if r.code != 0 || !strings.Contains(r.stdout, "would remove image "+strings.TrimPrefix(ids[0], "sha256:")[:12]+" ("+base+")") {
			t.Fatalf("prune --dry-run does not name the stale derived image %s:\n%s", ids[0], r)
		}
	})
}
