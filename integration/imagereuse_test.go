//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A derived image is named by its content, so a run whose state directory has no
// record of it (a CI runner's fresh home, another state directory) uses the one the
// engine has: it prepares nothing and makes no image. An image that only carries the
// right labels is never used: here one made like devsandbox's (the base and one
// layer, the labels of the genuine image, which a lookup by those labels finds) with
// another init, which runs the genuine one after leaving a mark in the project, and a
// planted git (/bin/git, on the PATH). With the genuine image gone, a run with a fresh state
// directory makes its own again, of the same ID, and the forged one's init and git
// never run.
func TestDockerDerivedImageReuse(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		var rnd [4]byte
		_, _ = rand.Read(rnd[:])
		base := "devsandbox-test/reuse-" + hex.EncodeToString(rnd[:]) + ":1"
		cid := dockerAt(t, iso, "create", "devsandbox-test/busybox:1", "true")
		t.Cleanup(func() { _ = dockerCmd(iso, "rm", "-f", cid).Run() })
		dockerAt(t, iso, "commit", "--change", "LABEL it.unique="+hex.EncodeToString(rnd[:]), cid, base)
		dockerAt(t, iso, "rm", cid)
		baseID := dockerAt(t, iso, "image", "inspect", "--format", "{{.Id}}", base)
		derived := func(labels ...string) []string {
			args := []string{"images", "-a", "-q", "--no-trunc", "--filter", "label=dev.devsandbox.base=" + baseID}
			for _, l := range labels {
				args = append(args, "--filter", "label="+l)
			}
			ids := strings.Fields(dockerAt(t, iso, args...))
			slices.Sort(ids)
			return slices.Compact(ids)
		}
		t.Cleanup(func() {
			for _, id := range derived() {
				_ = dockerCmd(iso, "rmi", "-f", id).Run()
			}
			_ = dockerCmd(iso, "rmi", base).Run()
			_ = dockerCmd(iso, "rmi", "-f", baseID).Run()
		})
		p := newProject(t)
		var states atomic.Int32
		runFresh := func() result {
			state := "state" + strconv.Itoa(int(states.Add(1)))
			p.mkdir(state)
			return run(t, p.dir, []string{"XDG_STATE_HOME=" + p.path(state)}, "", "--isolator="+iso, "--image="+base, "--egress=none", "--",
				"/bin/sh", "-c", "if command -v git >/dev/null; then echo planted git; fi; echo ran")
		}

		r := runFresh()
		if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, "preparing the image "+base) {
			t.Fatalf("the first run:\n%s", r)
		}
		genuine := derived()
		if len(genuine) != 1 {
			t.Fatalf("derived images after the first run: %q", genuine)
		}
		// A fresh state directory: the image is found by its content, not made.
		r = runFresh()
		if r.code != 0 || r.stdout != "ran\n" || strings.Contains(r.stderr, "preparing") {
			t.Fatalf("a run with a fresh state directory prepared an image or failed:\n%s", r)
		}
		if ids := derived(); !slices.Equal(ids, genuine) {
			t.Fatalf("derived images after a run with a fresh state directory: %q, want only %q", ids, genuine)
		}

		// The forgery: a container of the base with the genuine image's entrypoint and
		// labels, its files with the init replaced and git planted, committed.
		var labels []string
		for _, l := range []string{"dev.devsandbox.base", "dev.devsandbox.base-ref", "dev.devsandbox.content", "dev.devsandbox.version", "dev.devsandbox.uid"} {
			labels = append(labels, l+"="+dockerAt(t, iso, "image", "inspect", "--format", `{{index .Config.Labels "`+l+`"}}`, genuine[0]))
		}
		dir := t.TempDir()
		src := dockerAt(t, iso, "create", genuine[0])
		t.Cleanup(func() { _ = dockerCmd(iso, "rm", "-f", src).Run() })
		for _, f := range []string{"/run/devsandbox", "/etc/passwd", "/etc/group"} {
			dockerAt(t, iso, "cp", src+":"+f, filepath.Join(dir, filepath.Base(f)))
		}
		dockerAt(t, iso, "rm", src) // before the image it was made from is removed
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		forgedInit := "#!/bin/sh\necho the forged init ran >\"$PWD/FORGED-INIT\" 2>/dev/null\nexec /run/devsandbox/init.real \"$@\"\n"
		var layer bytes.Buffer
		tw := tar.NewWriter(&layer)
		for _, f := range []struct {
			name string
			data []byte
		}{
			{"run/devsandbox/init", []byte(forgedInit)}, {"run/devsandbox/init.real", read("devsandbox/init")},
			{"run/devsandbox/devsandbox-proxy", read("devsandbox/devsandbox-proxy")},
			{"etc/passwd", read("passwd")}, {"etc/group", read("group")}, {"bin/git", []byte("#!/bin/sh\necho planted\n")},
		} {
			if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o555, Size: int64(len(f.data))}); err != nil {
				t.Fatal(err)
			}
			_, _ = tw.Write(f.data)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		create := []string{"create", "--entrypoint", "/run/devsandbox/init"}
		for _, l := range labels {
			create = append(create, "--label", l)
		}
		fc := dockerAt(t, iso, append(create, baseID)...)
		t.Cleanup(func() { _ = dockerCmd(iso, "rm", "-f", fc).Run() })
		cp := dockerCmd(iso, "cp", "-", fc+":/")
		cp.Stdin = &layer
		if out, err := cp.CombinedOutput(); err != nil {
			t.Fatalf("copying the forged files in: %v: %s", err, out)
		}
		forged := dockerAt(t, iso, "commit", fc)
		dockerAt(t, iso, "rm", fc)
		dockerAt(t, iso, "rmi", genuine[0])
		// What a lookup by the labels finds: the forgery, of the base and one layer.
		if ids := derived(labels...); !slices.Equal(ids, []string{forged}) {
			t.Fatalf("images with the genuine image's labels: %q, want the forged %s", ids, forged)
		}
		layers := func(id string) int {
			return len(strings.Fields(dockerAt(t, iso, "image", "inspect", "--format", `{{range .RootFS.Layers}}{{.}} {{end}}`, id)))
		}
		if n, nb := layers(forged), layers(baseID); n != nb+1 {
			t.Fatalf("the forged image has %d layers, its base %d; want one more", n, nb)
		}

		r = runFresh()
		if b, err := os.ReadFile(filepath.Join(p.dir, "FORGED-INIT")); err == nil {
			t.Fatalf("the forged image's init ran (%s):\n%s", bytes.TrimSpace(b), r)
		}
		if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, "preparing the image "+base) {
			t.Fatalf("a run with a fresh state directory beside a forged image (it must make its own):\n%s", r)
		}
		if ids := derived(); !slices.Equal(ids, sortedPair(forged, genuine[0])) {
			t.Fatalf("derived images after the run beside the forgery: %q, want the forged %s and the genuine %s made again (same ID)", ids, forged, genuine[0])
		}

		// Runs with state directories of their own start together (a CI job's
		// parallel tests, each with its own home; their build locks differ): each may
		// load the image, and all get the one of that ID.
		dockerAt(t, iso, "rmi", genuine[0])
		rs := make([]result, 2)
		var wg sync.WaitGroup
		for i := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs[i] = runFresh()
			}()
		}
		wg.Wait()
		for _, r := range rs {
			if r.code != 0 || r.stdout != "ran\n" {
				t.Fatalf("a concurrent run with a state directory of its own:\n%s", r)
			}
		}
		if ids := derived(); !slices.Equal(ids, sortedPair(forged, genuine[0])) {
			t.Fatalf("derived images after concurrent runs with fresh state directories: %q, want the forged %s and the genuine %s", ids, forged, genuine[0])
		}
	})
}

// sortedPair is a and b, sorted.
func sortedPair(a, b string) []string {
	s := []string{a, b}
	slices.Sort(s)
	return s
}
