package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestJudge: doctor judges a program against the plan a run from here would get, and
// without one (a configuration that did not load) refuses one the user may write.
func TestJudge(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "bwrap")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&Isolator{}).judge("bubblewrap", f); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(refusal(err), f+" (found on PATH), lies where you can write") {
		t.Errorf("judge without a plan = %v, want a refusal naming %s", err, f)
	}
	planned := &isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: filepath.Join(d, "proj"), Dest: filepath.Join(d, "proj"), Why: "project"}}}
	if err := (&Isolator{Planned: planned}).judge("bubblewrap", f); err != nil {
		t.Errorf("judge of a program outside the plan's binds = %v, want nil", err)
	}
	planned.Mounts[0].Source, planned.Mounts[0].Dest = d, d
	if err := (&Isolator{Planned: planned}).judge("bubblewrap", f); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("judge of a program in the plan's project = %v, want ErrProtection", err)
	}
}
