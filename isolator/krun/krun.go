// Package krun runs a Plan in a libkrun microVM through podman's API (podman 4.0 or
// newer; the v5 bindings): `podman run --runtime krun`, where crun's krun handler boots
// the container's root as a VM with its own guest kernel. The view is the docker
// backend's: the project at its host path, the sandbox home at docker.home, masks, a
// private /tmp, an environment allowlist, a read-only root filesystem, the host user's
// UID and GID (keep-id) with no capabilities and no-new-privileges.
//
// specGen (pure) turns a Plan into a SpecGenerator plus the few generated host files it
// binds. Run connects to podman's API socket (starting `podman system service` with an
// idle timeout when none listens), creates the container, attaches, starts it and
// relays the session. In egress allowlist mode the container gets podman's network,
// and Run applies the rules from the host in its network namespace (nsenter and nft,
// see firewall.go) after it starts and before its init gets the hello frame it waits
// for; published ports are Unix sockets in a shared directory the init serves. devsandbox-init, bound read-only at InitPath, is the container's
// init: it verifies every protection before it starts the command (DESIGN guarantee
// 9) and speaks the wire protocol on its stdin, through which secrets, input, window
// sizes and signals travel.
//
// Two libkrun limits shape the backend: a running VM cannot be exec'd into (so there is
// no keep_container), and the guest sees host files only through virtio-fs (see
// docs/security-model.md for what that changes).
//
// The podman bindings are a large dependency tree whose package initialisation would
// slow every devsandbox launch, so this package is linked only into devsandbox-krun;
// devsandbox talks to it through isolator/krun/helper.
package krun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// Isolator is the krun backend.
type Isolator struct {
	Settings helper.Settings

	// Signals, when set, are the signals to forward to the command (devsandbox-krun
	// gets them from devsandbox); nil forwards none: Run subscribes to no signal.
	Signals <-chan handoff.Signal
	// Freezer, when set, is where a run puts how to freeze its command while
	// devsandbox is stopped (handoff.Freezer; devsandbox-krun gets it from Serve).
	Freezer *handoff.Freezer
	// StopGrace is how long the command has to exit after SIGTERM once Run's context
	// ends, before its session is ended; zero means container.DefaultStopGrace.
	StopGrace time.Duration
	// Warn receives warnings for people; nil discards them.
	Warn func(msg string)
	// Phase, when set, is called as each launch phase ends (for --debug timings).
	Phase func(name string)

	// host is the host access and engineFn the API connection (tests replace them).
	host     Host
	engineFn func() (engine, error)
	// netns applies the egress rules (tests replace it; nil is the host's nsenter).
	netns netns
	// users holds the shared lock on the service devsandbox started (see Supervise).
	users *os.File
	// planned is the Plan of the run under way (Run sets it before it connects): a
	// podman its sandbox could have planted on PATH is never started (podmanStartable).
	planned *isolator.Plan
	// turnWaiting, set by tests only, is called when a run waits for the service's
	// turn (socket).
	turnWaiting func()
	// service is podman's API socket, opened once its listener was checked
	// (pinService): every connection goes through it.
	service *os.File
	// services starts the run's host services (nil: hostsvc.Start; tests replace it).
	services func(*isolator.Plan) (*hostsvc.Services, error)
	// exitWait bounds the wait for the exit status after the output ended (0:
	// exitReportWait; tests shorten it).
	exitWait time.Duration
}

var (
	_ isolator.Isolator  = (*Isolator)(nil)
	_ isolator.Diagnoser = (*Isolator)(nil)
	_ isolator.Viewer    = (*Isolator)(nil)
)

// ViewPlacement implements isolator.Viewer as the Stub does (helper.Placement): the
// image's root, the sandbox home bound at docker.home. A harness that runs this
// backend in its own process, rather than through the Stub, gets the same View from
// ViewOf.
func (b *Isolator) ViewPlacement(*isolator.Plan) (isolator.Placement, error) {
	return helper.Placement(b.Settings), nil
}

// Name implements isolator.Isolator.
func (*Isolator) Name() string { return "krun" }

func (b *Isolator) warn(format string, args ...any) {
	if b.Warn != nil {
		b.Warn(fmt.Sprintf(format, args...))
	}
}

func (b *Isolator) phase(name string) {
	if b.Phase != nil {
		b.Phase(name)
	}
}

func (b *Isolator) hostAccess() Host {
	if b.host != nil {
		return b.host
	}
	return osHost{}
}

// options are the spec options from the settings and the host's limits.
func (b *Isolator) options(h Host) Options {
	s := b.Settings
	o := Options{Image: s.Image, Runtime: s.Runtime, CPUs: s.CPUs, MemoryMiB: s.MemoryMiB, Home: s.Home, Version: s.Version}
	o.Binaries = egress.DefaultBinaries
	if s.Nft != "" {
		o.Binaries.Nft = s.Nft
	}
	if h != nil {
		o.NofileHard, o.NprocHard = h.HardLimits()
	}
	return o
}

// Render implements isolator.Isolator. The host's rlimits are left out, so the
// script is the same on every machine.
func (b *Isolator) Render(p *isolator.Plan) (isolator.Rendered, error) {
	if b.Settings.KeepContainer {
		return nil, helper.ErrKeep
	}
	return specGen(p, b.options(nil))
}

// Check implements isolator.Isolator: podman's API answers (a service is started
// when none listens), the image is in the user's storage, and for a microVM runtime
// /dev/kvm can be opened.
func (b *Isolator) Check(ctx context.Context) isolator.Status {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h := b.hostAccess()
	if b.Settings.Runtime != "runc" {
		if err := h.KVM(); err != nil {
			return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("/dev/kvm cannot be opened: %v", err), Fix: kvmFix}
		}
	}
	conn, err := b.connect(ctx, h, wantedLimits(b.options(h), b.Settings.Pids))
	if err != nil {
		return statusOf(err)
	}
	if err := conn.ImageExists(b.Settings.Image); err != nil {
		return statusOf(err)
	}
	return isolator.Status{State: isolator.Active}
}

const kvmFix = "the microVM needs KVM: load kvm_intel or kvm_amd and add yourself to the kvm group (sudo usermod -aG kvm $USER), or set krun.runtime = \"runc\" to run a plain container (no VM)"

// statusOf turns a connection or image error into a Status with a fix.
func statusOf(err error) isolator.Status {
	st := isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "run `devsandbox doctor` for the podman requirements"}
	if errors.Is(err, errNoImage) {
		st.Fix = "load or build the image (see the reason)"
	}
	return st
}
