package main

import (
	"os"
	"path/filepath"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// krunStub is the krun isolator of this binary: it runs devsandbox-krun, which links
// podman's bindings (see isolator/krun/helper). cfg may be nil (doctor outside a
// project): then the built-in defaults apply.
func krunStub(cfg *config.Config, phase func(string)) *handoff.Stub {
	if cfg == nil {
		return helper.Stub(helper.Settings{Runtime: "krun", CPUs: 2, MemoryMiB: 2048, Version: config.Version, UID: os.Getuid()}, nil, nil)
	}
	k, h := cfg.Krun, cfg.Host
	// DEVSANDBOX_NFT: the test override bwrap's egressBinaries also takes.
	nft := h.Vars["DEVSANDBOX_NFT"]
	if !filepath.IsAbs(nft) {
		nft = ""
	}
	return helper.Stub(helper.Settings{
		Image: k.Image, Runtime: k.Runtime, CPUs: k.CPUs, MemoryMiB: k.MemoryMiB, Socket: k.PodmanSocket,
		Home: cfg.Docker.Home, Version: config.Version, KeepContainer: cfg.Docker.KeepContainer,
		RuntimeDir: h.RuntimeDir, User: h.User, UID: h.UID, Nft: nft,
	}, h.Vars, phase)
}
