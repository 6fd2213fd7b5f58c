// Package helper is devsandbox's side of devsandbox-krun, the program that links the
// krun backend: the podman bindings cost every process that links them several
// milliseconds of package initialisation, so devsandbox (the bwrap launch path) has
// only the Stub, which hands each request to devsandbox-krun (package handoff).
//
// This package imports nothing from podman; see deps_test.go in cmd/devsandbox.
package helper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// Program is the helper's file name, installed next to devsandbox.
const Program = "devsandbox-krun"

// Settings are the krun.* settings and what the backend needs from the host.
type Settings struct {
	Image     string `json:"image"`     // krun.image
	Runtime   string `json:"runtime"`   // krun.runtime
	CPUs      int    `json:"cpus"`      // krun.cpus
	MemoryMiB int    `json:"memoryMiB"` // krun.memory_mib
	Socket    string `json:"socket"`    // krun.podman_socket; "" = discovered
	Home      string `json:"home"`      // docker.home, the in-container home
	Version   string `json:"version"`   // devsandbox's
	// Pids is limits.pids, which Check and doctor compare podman's service's task
	// limit with (a run compares its Plan's: see krun's serviceFits).
	Pids int `json:"pids,omitempty"`
	// KeepContainer is docker.keep_container, which krun refuses.
	KeepContainer bool `json:"keepContainer,omitempty"`
	// RuntimeDir is $XDG_RUNTIME_DIR ("" when unset); User and UID are the host user's.
	RuntimeDir string `json:"runtimeDir"`
	User       string `json:"user"`
	UID        int    `json:"uid"`
	// Nft overrides the host's nft for egress allowlist ("": the default path;
	// the integration tests point it at a failing program).
	Nft string `json:"nft,omitempty"`
	// StopGrace is how long the command has to exit after SIGTERM once the run's
	// context ended, before its session is ended (0: container.DefaultStopGrace).
	StopGrace time.Duration `json:"stopGrace,omitempty"`
}

// Stub is the krun isolator as devsandbox sees it: every method runs devsandbox-krun.
// environ is the host environment the helper runs with (config.Host.Vars); phase,
// when set, receives its launch phases.
// Its View (isolator.ViewOf) is p as a krun container sees it (Placement).
func Stub(s Settings, environ map[string]string, phase func(string)) *handoff.Stub {
	return &handoff.Stub{Backend: "krun", Program: Program, Settings: s, Environ: environ, Phase: phase, StopGrace: s.StopGrace,
		Place: func(*isolator.Plan) (isolator.Placement, error) { return Placement(s), nil }}
}

// Placement is where a krun container with the settings s places a Plan
// (isolator.Placement): the image's root, the sandbox home bound at docker.home
// (Settings.Home), never a volume. The Stub and the backend (krun.Isolator) both say it.
func Placement(s Settings) isolator.Placement {
	return isolator.Placement{Container: &isolator.ContainerHome{Path: s.Home}}
}

// ErrKeep refuses keep_container: a krun container cannot be exec'd into.
var ErrKeep = fmt.Errorf("%w: --keep-container (docker.keep_container) is not possible with the krun isolator: a libkrun microVM runs exactly one command and cannot be exec'd into; run without it, or use --isolator=docker", isolator.ErrUnavailable)

// OpPruneImages removes the default images of other devsandbox builds that no run used
// within --days from the user's podman storage, then krun's image ENV records no
// launch will use (krun.Isolator.PruneImages). Args: PruneArgs; Data: []string, one
// line per container, image and record.
const OpPruneImages = "prune-images"

// PruneArgs are OpPruneImages' arguments.
type PruneArgs struct {
	DryRun bool `json:"dryRun"`
	// StateRoot is devsandbox's state directory, which holds the records of the
	// images' last uses (package imageuse); MaxAge is prune's --days.
	StateRoot string        `json:"stateRoot"`
	MaxAge    time.Duration `json:"maxAge"`
}

// PruneImages runs OpPruneImages through s (a Stub) and returns its lines.
func PruneImages(ctx context.Context, s *handoff.Stub, stateRoot string, maxAge time.Duration, dryRun bool) ([]string, error) {
	r, err := s.Call(ctx, handoff.Request{Op: OpPruneImages, Args: handoff.Args(PruneArgs{DryRun: dryRun, StateRoot: stateRoot, MaxAge: maxAge})}, isolator.Stdio{})
	if err != nil {
		return nil, err
	}
	var lines []string
	if len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, &lines); err != nil {
			return nil, fmt.Errorf("reading the answer of %s: %w", Program, err)
		}
	}
	return lines, r.Err()
}
