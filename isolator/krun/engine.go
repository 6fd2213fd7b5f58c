package krun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/bindings/system"
	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/isolator"
)

// engine is the part of podman's API the backend uses.
type engine interface {
	Version() (string, error)
	ImageExists(image string) error
	// ImageEnv returns the image's ID and its ENV, "NAME=value".
	ImageEnv(image string) (id string, env []string, err error)
	// Create returns the new container's id and podman's warnings about it.
	Create(g *specgen.SpecGenerator) (id string, warnings []string, err error)
	// Runtime returns the OCI runtime podman gave the container, and the ID of the
	// image it was made from.
	Runtime(id string) (runtime, image string, err error)
	// Attach relays the container's stdio until its stream ends; ready is signalled
	// once attached.
	Attach(id string, stdin io.Reader, stdout, stderr io.Writer, ready chan bool) error
	Start(id string) error
	// Pid returns the host PID of the started container's first process.
	Pid(id string) (int, error)
	// Wait returns the exit status of the started container. podman 4.3 answers 0 at
	// once for a container that is only created, and "no such container" for one that
	// was removed (its exit status goes with it): Run waits after the start, on a
	// container it removes itself.
	Wait(id string) (int, error)
	// Remove kills and removes the container.
	Remove(id string) error
	// Pause freezes the container's processes (its cgroup); Unpause thaws them.
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
}

// podman is engine on the v5 bindings. Attach takes a connection of its own: the
// bindings change the connection's transport to hijack it.
type podman struct {
	ctx, attachCtx context.Context
	socket         string
}

// connect finds or starts the API service that can give a container the rlimits
// want (see socket) and connects to it.
func (b *Isolator) connect(ctx context.Context, h Host, want []spec.POSIXRlimit) (engine, error) {
	if b.engineFn != nil {
		return b.engineFn()
	}
	sock, err := b.socket(ctx, h, want)
	if err != nil {
		return nil, err
	}
	return b.dial(ctx, sock)
}

// errNotRunning: no podman service listens on the backend's socket.
var errNotRunning = errors.New("podman's API service for krun is not running")

// connectRunning connects to the API service only when one already listens: it
// starts none and takes no lock (a dry run makes nothing on the host). The service
// may end under it (nothing holds it): a request then fails.
func (b *Isolator) connectRunning(ctx context.Context, h Host) (engine, error) {
	sock := b.socketName()
	if !h.Listening(sock) {
		return nil, fmt.Errorf("%w on %s", errNotRunning, sock)
	}
	if b.engineFn != nil {
		return b.engineFn()
	}
	return b.dial(ctx, sock)
}

// dial connects to the service listening on sock, once its listener is shown to be
// outside every sandbox (pinService).
func (b *Isolator) dial(ctx context.Context, sock string) (engine, error) {
	pinned, f, err := pinService(sock)
	if err != nil {
		return nil, err
	}
	if b.service != nil {
		b.service.Close()
	}
	b.service = f
	uri := "unix://" + pinned
	type res struct {
		ctx context.Context
		err error
	}
	second := make(chan res, 1)
	go func() {
		c, err := bindings.NewConnection(ctx, uri)
		second <- res{c, err}
	}()
	c1, err := bindings.NewConnection(ctx, uri)
	r2 := <-second
	if err == nil {
		err = r2.err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: podman's API at %s does not answer: %w", isolator.ErrUnavailable, sock, err)
	}
	return &podman{ctx: c1, attachCtx: r2.ctx, socket: sock}, nil
}

func (e *podman) Version() (string, error) {
	v, err := system.Version(e.ctx, nil)
	if err != nil {
		return "", err
	}
	if v.Server != nil {
		return v.Server.Version, nil
	}
	return v.Client.Version, nil
}

// errNoImage means the image is not in the user's storage.
var errNoImage = errors.New("image not found")

func (e *podman) ImageExists(image string) error {
	ok, err := images.Exists(e.ctx, image, nil)
	if err != nil {
		return fmt.Errorf("%w: asking podman for %s: %w", isolator.ErrUnavailable, image, err)
	}
	if !ok {
		return e.imageMissing(image)
	}
	return nil
}

func (e *podman) ImageEnv(image string) (string, []string, error) {
	r, err := images.GetImage(e.ctx, image, nil)
	if err != nil {
		if strings.Contains(err.Error(), "image not known") || strings.Contains(err.Error(), "no such image") {
			return "", nil, e.imageMissing(image) // as create says it
		}
		return "", nil, fmt.Errorf("%w: reading the environment (ENV) of the image %s from podman: %w", isolator.ErrUnavailable, image, err)
	}
	if r.ImageData == nil {
		return "", nil, fmt.Errorf("%w: reading the environment (ENV) of the image %s from podman: no image data in its answer", isolator.ErrUnavailable, image)
	}
	if r.Config == nil {
		return r.ID, nil, nil
	}
	return r.ID, r.Config.Env, nil
}

// imageMissing is the error for an image the service's storage lacks, naming that
// storage (podman's answer, when it gives one).
func (e *podman) imageMissing(image string) error {
	root := ""
	if info, err := system.Info(e.ctx, nil); err == nil && info.Store != nil {
		root = info.Store.GraphRoot
	}
	return imageMissing(image, root, podmanEnv(os.Environ(), accountHome()))
}

func (e *podman) Create(g *specgen.SpecGenerator) (string, []string, error) {
	r, err := containers.CreateWithSpec(e.ctx, g, nil)
	if err != nil {
		if strings.Contains(err.Error(), "image not known") || strings.Contains(err.Error(), "no such image") {
			return "", nil, e.imageMissing(g.Image)
		}
		return "", nil, err
	}
	return r.ID, r.Warnings, nil
}

func (e *podman) Runtime(id string) (string, string, error) {
	c, err := containers.Inspect(e.ctx, id, new(containers.InspectOptions).WithSize(false))
	if err != nil {
		return "", "", err
	}
	return c.OCIRuntime, c.Image, nil
}

func (e *podman) Attach(id string, stdin io.Reader, stdout, stderr io.Writer, ready chan bool) error {
	// Not cut short when the run's context ends: the command is stopped through its
	// session then, and what it prints while it stops is its output still.
	return containers.Attach(context.WithoutCancel(e.attachCtx), id, stdin, stdout, stderr, ready, nil)
}

func (e *podman) Start(id string) error {
	// Nor is the start: the command may already run, print and be told to stop (the
	// run's end reaches it through its session, or removes a container not yet
	// started) before podman's answer arrives; a start cut short there failed a run
	// whose command had run, with "context canceled" for its status.
	return containers.Start(context.WithoutCancel(e.ctx), id, nil)
}

func (e *podman) Pid(id string) (int, error) {
	c, err := containers.Inspect(e.ctx, id, new(containers.InspectOptions).WithSize(false))
	if err != nil {
		return 0, err
	}
	if c.State == nil || c.State.Pid <= 0 {
		return 0, fmt.Errorf("the container has no process (it is not running)")
	}
	return c.State.Pid, nil
}

func (e *podman) Wait(id string) (int, error) {
	// Nor is the wait: a run whose context ended reports the status the command
	// ends with (its SIGTERM trap's, or 143), not a lost one.
	code, err := containers.Wait(context.WithoutCancel(e.ctx), id, new(containers.WaitOptions).WithConditions([]string{"exited", "stopped"}).WithInterval(waitInterval))
	return int(code), err
}

// Remove removes the container with its anonymous volumes: podman makes one for each
// VOLUME of the image, nameless, holding what the sandbox wrote there; left, it stays
// in the user's storage after the run, where nothing of devsandbox's finds it.
func (e *podman) Remove(id string) error {
	_, err := containers.Remove(context.WithoutCancel(e.ctx), id, new(containers.RemoveOptions).WithForce(true).WithIgnore(true).WithTimeout(0).WithVolumes(true))
	return err
}

func (e *podman) Pause(ctx context.Context, id string) error {
	return containers.Pause(e.with(ctx), id, nil)
}

func (e *podman) Unpause(ctx context.Context, id string) error {
	return containers.Unpause(e.with(ctx), id, nil)
}

// with is ctx's deadline on the connection's context (the bindings find their
// connection in the context).
func (e *podman) with(ctx context.Context) context.Context {
	c, cancel := context.WithCancel(e.ctx)
	context.AfterFunc(ctx, cancel)
	return c
}

// waitInterval is how often podman's service polls for the container's exit (its
// default of 250 ms would be most of a short run's time).
const waitInterval = "10ms"
