package krun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestPodmanStartable: a run never starts podman's service from a podman on PATH its
// sandbox can write; one outside the plan's binds, or no run's plan, is left alone.
func TestPodmanStartable(t *testing.T) {
	d := t.TempDir()
	bin := filepath.Join(d, "proj", ".venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	podman := filepath.Join(bin, "podman")
	if err := os.WriteFile(podman, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	proj := filepath.Join(d, "proj")
	b := &Isolator{planned: &isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: proj, Dest: proj, Why: "project"}}}}
	if _, err := b.podmanStartable(); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), podman+" (found on PATH)") {
		t.Errorf("podmanStartable with a podman in the project = %v, want a refusal naming it", err)
	}
	b.planned.Mounts[0].ReadOnly = true
	if got, err := b.podmanStartable(); err != nil || got != podman {
		t.Errorf("podmanStartable with the project read-only = %q, %v, want %s", got, err, podman)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(d, "data"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	if _, err := (&Isolator{}).podmanStartable(); err != nil {
		t.Errorf("podmanStartable without a run, in no known project = %v, want nil", err)
	}
	// Without a run (doctor, an image build, Check): refused in any project a
	// sandbox of the user's writes, as its record beside the sandbox home names it.
	rec := filepath.Join(d, "data", "devsandbox", "proj-12345678")
	if err := os.MkdirAll(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rec, "project"), []byte(proj+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Isolator{}).podmanStartable(); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "the devsandbox project "+proj) {
		t.Errorf("podmanStartable without a run, podman in a known project = %v, want a refusal naming the project", err)
	}
}

// TestServiceEnv: podman's service gets a PATH devsandbox chose, never the user's
// (whose entries may be directories a sandbox writes): podman's own directory first,
// so the supervisor finds the podman judged, then the system's directories.
func TestServiceEnv(t *testing.T) {
	env := serviceEnv([]string{"HOME=/home/u", "PATH=/home/u/proj/.venv/bin:/usr/bin", "PATHX=kept"}, "/opt/podman/bin/podman")
	want := []string{"HOME=/home/u", "PATHX=kept", "PATH=/opt/podman/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Errorf("serviceEnv = %q, want %q", env, want)
	}
	env = serviceEnv([]string{"PATH=/x"}, "/usr/bin/podman")
	if got := env[len(env)-1]; got != "PATH=/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin" {
		t.Errorf("serviceEnv's PATH for /usr/bin/podman = %q", got)
	}
}
