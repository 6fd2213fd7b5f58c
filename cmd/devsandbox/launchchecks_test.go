package main

import (
	"errors"
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
)

// --dry-run contacts no engine, so it cannot tell an engine that mounts an anchor as
// a volume's sub-path (API 1.45+) from an older remote one the launch refuses
// (docker's TestUnpinnableRefused, TestRunAnchorsByEngine): on a tcp:// address it
// checks the destinations, as that launch does, and leaves the anchor to the launch;
// a destination reached through a symlink still stops it.
func TestLaunchChecksRemoteEngineAnchors(t *testing.T) {
	proj := t.TempDir()
	p := &isolator.Plan{
		Project: isolator.Project{Dir: proj},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: proj, Dest: proj},
			{Kind: isolator.Bind, Source: proj + "/sub", Dest: proj + "/sub", Anchor: true},
			{Kind: isolator.MaskFile, Dest: proj + "/sub/.env", Why: "sandbox.mask_files"},
		},
	}
	remote := dockerhelper.New(dockerhelper.Settings{Host: "tcp://10.0.0.2:2376"}, map[string]string{}, nil)
	if err := launchChecks(remote, p); err != nil {
		t.Fatalf("remote engine, an anchor: %v, want it left to the launch", err)
	}
	if err := os.Symlink(t.TempDir(), proj+"/sub"); err != nil {
		t.Fatal(err)
	}
	if err := launchChecks(remote, p); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("remote engine, the anchor's directory a symlink: %v, want ErrProtection", err)
	}
}

// A local engine's launch pins the Plan's sources, as bwrap's does: --dry-run refuses a
// bind source that is a symlink where the sandbox can write, as a launch would.
func TestLaunchChecksLocalEnginePins(t *testing.T) {
	proj := t.TempDir()
	if err := os.Symlink(t.TempDir(), proj+"/sub"); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{
		Project: isolator.Project{Dir: proj},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: proj, Dest: proj},
			{Kind: isolator.Bind, Source: proj + "/sub", Dest: "/mnt/sub", ReadOnly: true, Anchor: true},
		},
	}
	local := dockerhelper.New(dockerhelper.Settings{Host: "unix:///var/run/docker.sock"}, map[string]string{}, nil)
	if err := launchChecks(local, p); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("local engine, a bind source that is a symlink in the project: %v, want ErrProtection", err)
	}
}
