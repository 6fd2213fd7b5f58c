// Package docker runs a Plan in a Docker container through the Engine API (API 1.41,
// Docker 20.10, and newer engines by negotiation). It gives the view bwrap gives: the
// project at its host path, the sandbox home at docker.home, masks, a private /tmp, an
// environment allowlist, no Docker socket, a read-only root filesystem, the host
// user's UID and GID with no capabilities and no-new-privileges.
//
// Render (pure) turns a Plan into a Spec: the container config, host config and, with
// keep_container, the exec that runs the command in a kept container. Run writes the
// few generated host files the Spec names, creates or reuses the container, and relays
// the session. devsandbox-init, at InitPath in an image derived once from docker.image
// (with the other files devsandbox ships; see derivedImage), is the container's init:
// it verifies every protection before it starts the command (DESIGN guarantee 9) and
// speaks the wire protocol on its stdin, through which secrets, input, window sizes
// and signals travel, and whose end tells it devsandbox is gone.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
)

// Isolator is the docker backend.
type Isolator struct {
	Options
	// HostAddr is docker.host; Env and HostHome are the host environment and home,
	// from which DOCKER_HOST and the docker context are read.
	HostAddr string
	Env      map[string]string
	HostHome string

	// FirewallTool, when set, is the program the firewall helper container runs
	// instead of devsandbox-init (a test override: a tool that fails must abort the
	// run).
	FirewallTool string

	// Signals, when set, are the signals to forward to the command (devsandbox-docker
	// gets them from devsandbox); nil forwards none: Run subscribes to no signal.
	Signals <-chan handoff.Signal
	// Freezer, when set, is where a run puts how to freeze its command while
	// devsandbox is stopped (handoff.Freezer; devsandbox-docker gets it from Serve).
	Freezer *handoff.Freezer
	// StopGrace is how long the command has to exit after SIGTERM once Run's context
	// ends, before the session is ended and the init kills what is left; zero means
	// container.DefaultStopGrace.
	StopGrace time.Duration
	// Phase, when set, is called as each launch phase ends (for --debug timings).
	Phase func(name string)
	// Warn receives warnings for people; nil discards them.
	Warn func(msg string)
	// Progress receives the line a run prints while it prepares a derived image
	// (nil: discarded; devsandbox-docker sets it to its stderr, the caller's).
	Progress io.Writer

	// imageWay is how derivedImage found or made the run's image, for --debug's
	// timings: "cached", "found by content", "loaded", "committed" (the base cannot
	// be given a layer by a load) or "committed, load refused" (the engine did not
	// take the load or named the image otherwise: an engine whose images are in
	// containerd's store).
	imageWay string
	// mark is the name of the run's mark in the project's state directory
	// (markRun), once Run holds it.
	mark string
	// head is the work the request's head started (headstart.go), for Run's own
	// client and first requests; nil: none.
	head *headStart
	// dial connects to the engine; nil means ResolveAddress and Dial.
	dial func() (Engine, Address, error)
	// dialAt connects to another engine the derived-image cache names, for prune
	// (nil: Dial).
	dialAt func(Address) (Engine, error)
	// afterCacheCheck, when set (by tests), runs between prune's check of the
	// derived-image cache's entries and its rewrite.
	afterCacheCheck func()
	// services starts the run's host services (nil: hostsvc.Start; tests replace it).
	services func(*isolator.Plan) (*hostsvc.Services, error)
	// ship reads the programs a run copies into containers (nil: shipped; tests
	// replace it).
	ship func(p *isolator.Plan, arch func() (string, error), proxy bool) (programs, error)
	// podman runs the podman CLI for removing a sandbox home (nil:
	// container.HostPodman; tests replace it).
	podman container.Podman
	// network tells whether an engine runs in this machine's network namespace
	// (nil: Address.HostNetwork; tests replace it).
	network func(Address) engineaddr.Network
}

var (
	_ isolator.Isolator  = (*Isolator)(nil)
	_ isolator.Quick     = (*Isolator)(nil)
	_ isolator.Diagnoser = (*Isolator)(nil)
	_ isolator.Viewer    = (*Isolator)(nil)
)

// ViewPlacement implements isolator.Viewer as the Stub does (helper.Placement): the
// home at docker.home, an engine volume when the engine's address, resolved and pinned
// as a run's is, is not a local Unix socket (or one a relay serves). A harness that runs this backend in its
// own process, rather than through the Stub, gets the same View from ViewOf.
func (b *Isolator) ViewPlacement(*isolator.Plan) (isolator.Placement, error) {
	a, err := b.address()
	if err != nil {
		return isolator.Placement{}, fmt.Errorf("the docker engine's address, which says where the sandbox home is: %w", err)
	}
	a = a.TryPin() // Local asks the pinned socket's listener, as a run's does (a relay is remote)
	defer a.Unpin()
	return helper.Placement(b.Home, a), nil
}

// Name implements isolator.Isolator.
func (*Isolator) Name() string { return "docker" }

func (b *Isolator) phase(name string) {
	if b.Phase != nil {
		b.Phase(name)
	}
}

func (b *Isolator) warn(format string, args ...any) {
	if b.Warn != nil {
		b.Warn(fmt.Sprintf(format, args...))
	}
}

// hostNetwork reports whether the engine at addr is shown to run its containers'
// host network in this machine's network namespace (engineaddr.Address.HostNetwork):
// this machine's addresses are then that host's. When it is not, the run reads the
// engine host's addresses in a container of that network (engineHostAddresses).
func (b *Isolator) hostNetwork(addr Address) bool {
	if b.network != nil {
		return b.network(addr).Here
	}
	return addr.HostNetwork().Here
}

// address resolves the engine address.
func (b *Isolator) address() (Address, error) {
	return ResolveAddress(b.HostAddr, b.Env, b.HostHome)
}

// connect connects to the engine (connect) without waiting for its verdict: the
// run's requests wait for it where they need to (every request of the connection
// does), while the host side is prepared. says is the engine's answer to its ping
// (nil for a test's Engine).
func (b *Isolator) connect(ctx context.Context) (Engine, Address, *future[engineSays], error) {
	if b.dial != nil {
		e, a, err := b.dial()
		return e, a, nil, err
	}
	a, err := b.address()
	if err != nil {
		return nil, Address{}, nil, fmt.Errorf("%w: %w", isolator.ErrUnavailable, err)
	}
	c, a, err := connect(ctx, a)
	if err != nil {
		return nil, a, nil, err
	}
	return c, a, c.says, nil
}

// engine connects to the engine and waits for its verdict (Dial): an engine the
// backend does not speak to is refused before anything but its ping is sent.
func (b *Isolator) engine(ctx context.Context) (Engine, Address, error) {
	e, a, says, err := b.connect(ctx)
	if err != nil {
		return nil, a, err
	}
	if says != nil {
		if _, err := says.get(); err != nil {
			_ = e.Close()
			return nil, a, err
		}
	}
	return e, a, nil
}

// Render implements isolator.Isolator: the spec as Run makes it, docker.image standing
// for the image derived from it (Run makes that in the engine and uses its ID).
func (b *Isolator) Render(p *isolator.Plan) (isolator.Rendered, error) {
	return containerConfig(p, engineOptions(p, b.Options))
}

// QuickCheck implements isolator.Quick: the engine's Unix socket exists (a remote
// engine is assumed usable). It contacts no daemon.
func (b *Isolator) QuickCheck() isolator.Status {
	a, err := b.address()
	if err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: addressFix}
	}
	if sock, ok := strings.CutPrefix(a.Host, "unix://"); ok {
		if _, err := os.Stat(sock); err != nil {
			return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("no docker engine at %s (%s)", a.Host, a.Origin), Fix: startHint}
		}
	}
	return isolator.Status{State: isolator.Active}
}

// addressFix is the fix of an engine address devsandbox refuses (its reason already
// says what to do for that address; this names where the address comes from).
const addressFix = "fix DOCKER_HOST or the docker context (docker context use default), or set docker.host"

const startHint = "install and start Docker (Debian/Ubuntu: sudo apt-get install docker.io && sudo systemctl start docker), or set docker.host / DOCKER_HOST"

// Check implements isolator.Isolator: the engine answers, speaks API 1.41 or newer,
// and has the image (b.Image, when set), without which every run stops.
func (b *Isolator) Check(ctx context.Context) isolator.Status {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b.dial == nil {
		// An address refused (an ssh:// context) is reported in the words a launch and
		// `config validate` use, with its own fix, not as an engine to start.
		if _, err := b.address(); err != nil {
			return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: addressFix}
		}
	}
	e, a, err := b.engine(ctx)
	if r, ok := refused(err); ok {
		return r.st
	}
	if err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: dialFix(err)}
	}
	defer e.Close()
	v, err := e.ServerVersion(ctx)
	if err != nil {
		return engineDown(a, err)
	}
	if pv := podman(v); pv != "" {
		return podmanRefused(a.Host, pv)
	}
	if apiBefore(v.APIVersion, MinAPI) {
		return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("the engine speaks API %s, older than %s", v.APIVersion, MinAPI), Fix: "upgrade Docker to 20.10 or newer"}
	}
	if b.Image != "" {
		if _, err := e.ImageInspect(ctx, b.Image); cerrdefs.IsNotFound(err) {
			return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("the image %s is not on the docker engine at %s", b.Image, a.Host), Fix: imageFix}
		}
	}
	return isolator.Status{State: isolator.Active}
}

// imageFix is the fix of an image the engine lacks.
const imageFix = "devsandbox image build (or set docker.image / --image to an image you have)"

// MinAPI is the oldest Engine API the backend uses.
const MinAPI = "1.41"

func engineDown(a Address, err error) isolator.Status {
	if r, ok := refused(err); ok {
		return r.st // the engine's verdict, already worded
	}
	if reason, fix, ok := tlsCause(a, err); ok {
		// It answers, over TLS: starting Docker is not the fix.
		return isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}
	}
	st := isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("the docker engine at %s (%s) does not answer: %v", a.Host, a.Origin, err), Fix: startHint}
	if errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission denied") {
		st.Fix = "add your user to the docker group (sudo usermod -aG docker $USER, then log in again; that group is root-equivalent) or use rootless Docker"
	}
	return st
}

// apiBefore reports whether API version v is older than min ("1.41" style).
func apiBefore(v, min string) bool { return engineaddr.APIBefore(v, min) }
