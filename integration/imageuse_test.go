//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run records its use of the images it runs in the user's state, for `sandboxes
// prune` (package imageuse): docker its derived image and that image's base
// (docker.image), krun krun.image in podman; bwrap, which runs no image, nothing. The
// sandbox, which tries to, cannot reach the records: not to plant one (an image kept
// forever), not to age one (an image another build still uses removed). The records are
// the user's, in $XDG_STATE_HOME/devsandbox/image-use, outside anything a sandbox can
// write.
func TestImageUseRecorded(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		xdg, err := os.MkdirTemp("/var/tmp", "dsb-imageuse-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(xdg) })
		state := filepath.Join(xdg, "state")
		for _, d := range []string{xdg, state} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
		records := filepath.Join(state, "devsandbox", "image-use")
		cfg := p.writeConfig(iso, "imageuse.toml", "")
		// At the records' host path and at the one XDG_STATE_HOME's default would give
		// in the sandbox: make the directory, plant a record, age every record.
		script := `for d in ` + records + ` "$HOME/.local/state/devsandbox/image-use"; do
				mkdir -p "$d" 2>/dev/null
				touch "$d/docker-planted" 2>/dev/null
				for f in "$d"/*; do touch -d 2001-01-01 "$f" 2>/dev/null; done
			done
			echo done`
		start := time.Now().Add(-time.Second) // the file systems' times are not finer than that everywhere
		r := run(t, p.dir, []string{"XDG_STATE_HOME=" + state}, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script)
		end := time.Now().Add(time.Second)
		if r.code != 0 || r.stdout != "done\n" {
			t.Fatalf("the run: %s", r)
		}
		ents, err := os.ReadDir(records)
		if iso == "bwrap" {
			if !os.IsNotExist(err) {
				t.Errorf("a bwrap run left %s: %v, %v", records, ents, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("no record of the run's images: %v", err)
		}
		engine, want := "docker", 2 // the derived image and its base
		if iso == "krun" {
			engine, want = "podman", 1
		}
		name := regexp.MustCompile(`^` + engine + `-[0-9a-f]{64}$`)
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if !name.MatchString(e.Name()) || !fi.Mode().IsRegular() || fi.ModTime().Before(start) || fi.ModTime().After(end) {
				t.Errorf("record %s: mode %v, time %v; want a regular file %s-ID of the run's time (%v to %v)", e.Name(), fi.Mode(), fi.ModTime(), engine, start, end)
			}
		}
		if len(got) != want {
			t.Errorf("records %q, want %d of %s images", got, want, engine)
		}
		if iso == localDocker {
			// The base's, which `sandboxes prune` looks for when it is another build's.
			out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", defaultImage(t)).Output()
			if err != nil {
				t.Fatal(err)
			}
			if id := "docker-" + strings.TrimPrefix(strings.TrimSpace(string(out)), "sha256:"); !slices.Contains(got, id) {
				t.Errorf("records %q lack the base image's, %s", got, id)
			}
		}
	})
}

// defaultImage is this build's default image, devsandbox/default:VERSION.
func defaultImage(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return "devsandbox/default:" + strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
}
