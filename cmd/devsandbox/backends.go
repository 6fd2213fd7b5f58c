package main

import (
	"path/filepath"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	krunhelper "github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// The isolators of this binary: bwrap in process (Linux, see bwrap_linux.go); docker
// and krun in devsandbox-docker and devsandbox-krun, whose client libraries would
// slow every launch (package handoff). cfg is the run's configuration (doctor's:
// see doctorConfig); phase, when set, receives the launch phases.
func (a *app) isolatorTable(cfg *config.Config, phase func(string)) isolator.Table {
	t := isolator.Table{
		"docker": func() isolator.Isolator { return dockerStub(cfg, phase) },
		"krun":   func() isolator.Isolator { return krunStub(cfg, phase) },
	}
	a.addBwrap(t, cfg, phase)
	return t
}

// nftOverride is DEVSANDBOX_NFT, the test override of the firewall program every
// backend takes (an absolute path; the integration suite points it at a failing
// program to prove a broken firewall aborts the run).
func nftOverride(h config.Host) string {
	if v := h.Vars["DEVSANDBOX_NFT"]; filepath.IsAbs(v) {
		return v
	}
	return ""
}

func dockerStub(cfg *config.Config, phase func(string)) *dockerhelper.Stub {
	d, h := cfg.Docker, cfg.Host
	s := dockerhelper.New(dockerhelper.Settings{
		Image: d.Image, Home: d.Home, Keep: d.KeepContainer, AgentBind: d.AgentBind, Version: config.Version,
		Host: d.Host, HostHome: h.Home, FirewallTool: nftOverride(h),
	}, h.Vars, phase)
	s.ForwardSignals = true // Ctrl-C, SIGTERM, ... reach the command
	return s
}

func krunStub(cfg *config.Config, phase func(string)) isolator.Isolator {
	k, h := cfg.Krun, cfg.Host
	s := krunhelper.Stub(krunhelper.Settings{
		Image: k.Image, Runtime: k.Runtime, CPUs: k.CPUs, MemoryMiB: k.MemoryMiB, Socket: k.PodmanSocket,
		Home: cfg.Docker.Home, Version: config.Version, KeepContainer: cfg.Docker.KeepContainer, Pids: cfg.Limits.Pids,
		RuntimeDir: h.RuntimeDir, User: h.User, UID: h.UID, Nft: nftOverride(h),
	}, h.Vars, phase)
	s.ForwardSignals = true
	return s
}

// launchChecks are the refusals iso's launch makes on the host before anything
// starts — a mount's source or destination reached through a symlink where the
// sandbox can write, a missing bind source, a mask source that is not empty — made
// without creating anything, so that --dry-run stops, with the same message and
// status, where a run would: the isolator's own (isolator.HostChecker), else the
// pinning of the Plan's sources (pin.Check).
func launchChecks(iso isolator.Isolator, p *isolator.Plan) error {
	if c, ok := iso.(isolator.HostChecker); ok {
		return c.CheckHost(p)
	}
	return pin.Check(p)
}
