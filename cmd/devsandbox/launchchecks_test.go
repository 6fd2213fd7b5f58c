package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
)

// --dry-run refuses what the launch refuses: a plan with an anchor for an engine that
// cannot pin it (a tcp:// address) stops with the launch's error, and the same plan
// for a local engine passes (the launch pins it).
func TestLaunchChecksRefuseAnchorsOnARemoteEngine(t *testing.T) {
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
	err := launchChecks(remote, p)
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), proj+"/sub holds "+proj+"/sub/.env") {
		t.Fatalf("remote engine: %v, want the launch's refusal of %s/sub", err, proj)
	}
	p.Mounts[1].Anchor = false
	if err := launchChecks(remote, p); err != nil {
		t.Errorf("remote engine, no anchor: %v", err)
	}
}
