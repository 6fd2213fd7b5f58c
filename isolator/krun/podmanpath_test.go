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
	if err := b.podmanStartable(); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), podman+" (found on PATH)") {
		t.Errorf("podmanStartable with a podman in the project = %v, want a refusal naming it", err)
	}
	b.planned.Mounts[0].ReadOnly = true
	if err := b.podmanStartable(); err != nil {
		t.Errorf("podmanStartable with the project read-only = %v, want nil", err)
	}
	if err := (&Isolator{}).podmanStartable(); err != nil {
		t.Errorf("podmanStartable without a run = %v, want nil", err)
	}
}
