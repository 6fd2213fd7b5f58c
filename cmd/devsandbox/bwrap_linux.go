package main

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/shim"
)

// On Linux this binary has the bwrap backend, and is also bwrap's shim (when run
// as ShimPath). bwrap_other.go stands in for this file elsewhere.

// startup runs this binary as bwrap's shim when bwrap started it as ShimPath (and
// then never returns); otherwise it marks every descriptor devsandbox inherited
// close-on-exec, so none reaches bwrap or the sandbox.
func startup() {
	if os.Args[0] == bwrap.ShimPath {
		os.Exit(shim.Main(os.Args[1:], os.Stderr))
	}
	shim.CloseOnExecInherited()
}

// autoOrder is the preference of isolator = "auto".
var autoOrder = []string{"bwrap", "docker"}

// isolatorTable is the explicit table of backends this binary has. dk configures the
// docker backend (nil: from defaults); see docker.go. kr is the krun backend, which
// runs in devsandbox-krun (see krun.go).
func isolatorTable(b *bwrap.Isolator, dk *dockerSettings, kr *handoff.Stub) isolator.Table {
	return isolator.Table{
		"bwrap": func() isolator.Isolator {
			if b != nil {
				return b
			}
			return bwrap.New()
		},
		"docker": func() isolator.Isolator { return newDocker(dk) },
		"krun":   func() isolator.Isolator { return kr },
	}
}

// newBwrap is the bwrap backend of a run; phase (nil: none) receives its launch
// phases.
func (a *app) newBwrap(cfg *config.Config, phase func(string)) *bwrap.Isolator {
	return &bwrap.Isolator{Warn: func(m string) { a.warn("%s", m) }, Binaries: egressBinaries(cfg.Host), Phase: phase, RuntimeDir: cfg.Host.RuntimeDir}
}

// doctorBwrap is the bwrap backend doctor checks.
func (a *app) doctorBwrap(runtimeDir string) *bwrap.Isolator {
	return &bwrap.Isolator{RuntimeDir: runtimeDir}
}

// egressBinaries are the firewall tools, with the test overrides DEVSANDBOX_NFT and
// DEVSANDBOX_IPTABLES (absolute paths; the integration suite points them at failing
// programs to prove a broken firewall aborts the run).
func egressBinaries(h config.Host) egress.Binaries {
	bin := egress.DefaultBinaries
	if p, err := exec.LookPath("pasta"); err == nil {
		bin.Pasta = p
	}
	if v := h.Vars["DEVSANDBOX_NFT"]; filepath.IsAbs(v) {
		bin.Nft = v
	}
	if v := h.Vars["DEVSANDBOX_IPTABLES"]; filepath.IsAbs(v) {
		bin.Iptables, bin.Ip6tables = v, v
	}
	return bin
}
