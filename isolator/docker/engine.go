package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
)

// Address is where the engine is and where that choice came from.
type Address = engineaddr.Address

// ResolveAddress picks the engine address (see engineaddr.Resolve).
var ResolveAddress = engineaddr.Resolve

// Engine is the part of the Docker Engine API the backend uses; connect's connection
// (a Docker client behind the engine's verdict) implements it. Everything it calls
// exists in API 1.41 (Docker 20.10).
type Engine interface {
	// Ping asks the engine's unversioned /_ping: its API version is a header of the
	// answer, which the engine gives without the work of ServerVersion (Docker 20.10
	// runs runc and docker-init to answer that one: ~10 ms here).
	Ping(ctx context.Context) (types.Ping, error)
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)

	ContainerCreate(ctx context.Context, config *dockercontainer.Config, hostConfig *dockercontainer.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, name string) (dockercontainer.CreateResponse, error)
	ContainerAttach(ctx context.Context, id string, options dockercontainer.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, id string, options dockercontainer.StartOptions) error
	ContainerPause(ctx context.Context, id string) error
	ContainerUnpause(ctx context.Context, id string) error
	ContainerWait(ctx context.Context, id string, condition dockercontainer.WaitCondition) (<-chan dockercontainer.WaitResponse, <-chan error)
	ContainerInspect(ctx context.Context, id string) (dockercontainer.InspectResponse, error)
	ContainerList(ctx context.Context, options dockercontainer.ListOptions) ([]dockercontainer.Summary, error)
	ContainerRemove(ctx context.Context, id string, options dockercontainer.RemoveOptions) error
	CopyToContainer(ctx context.Context, id, dstPath string, content io.Reader, options dockercontainer.CopyToContainerOptions) error
	ContainerCommit(ctx context.Context, id string, options dockercontainer.CommitOptions) (dockercontainer.CommitResponse, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, id string, options image.RemoveOptions) ([]image.DeleteResponse, error)
	ImageTag(ctx context.Context, source, target string) error

	ContainerExecCreate(ctx context.Context, id string, options dockercontainer.ExecOptions) (dockercontainer.ExecCreateResponse, error)
	ContainerExecAttach(ctx context.Context, execID string, config dockercontainer.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecInspect(ctx context.Context, execID string) (dockercontainer.ExecInspect, error)

	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error

	Close() error
}

var _ Engine = (*engineConn)(nil)

// Dial connects to the engine at a as connect does and waits for its verdict (the
// answer to its ping): the Engine it returns speaks to a Docker engine, and a is
// returned with its Unix socket pinned. Podman's Docker-compatible API, a listener
// whose ping is not a Docker engine's and an engine that does not answer are
// refused (a refusal, isolator.ErrUnavailable) before anything but the ping is sent.
// ctx bounds the ping.
func Dial(ctx context.Context, a Address) (Engine, Address, error) {
	c, a, err := connect(ctx, a)
	if err != nil {
		return nil, a, err
	}
	if _, err := c.says.get(); err != nil {
		_ = c.Close()
		return nil, a, err
	}
	return c, a, nil
}

// connect is the one way the backend reaches an engine; no other code makes a
// Docker client (TestOneEngineConstructor). It
//   - pins a's Unix socket (engineaddr.Address.Pin): every connection goes to the
//     socket that was checked, and a listener a sandbox planted is refused
//     (isolator.ErrProtection);
//   - refuses podman's service, told by its listener on this machine's socket
//     (Address.PodmanService), before any request;
//   - makes the negotiating client and sends its ping at once (pingVerdict), bounded
//     by ctx and pingTimeout: the answer is the engine's verdict.
//
// Every request of the returned connection but its ping waits for that verdict and
// is refused unless the ping showed a Docker engine: Podman's API (by its headers:
// behind a relay, at a tcp:// address), an answer no Docker engine gives, or none.
// So no command, present or future, sends podman, or a listener that is not a
// Docker engine, anything but the ping. The caller closes the connection (Close
// also ends the ping and closes the pinned socket).
func connect(ctx context.Context, a Address) (*engineConn, Address, error) {
	a, err := a.Pin()
	if errors.Is(err, engineaddr.ErrPlanted) {
		return nil, a, fmt.Errorf("%w: %w", isolator.ErrProtection, err)
	}
	if err != nil {
		st := engineDown(a, err)
		return nil, a, fmt.Errorf("%w: %w: %s; %s", isolator.ErrUnavailable, ErrNoEngine, st.Reason, st.Fix)
	}
	if a.PodmanService() {
		a.Unpin()
		return nil, a, &refusal{st: podmanRefused(a.Host, "")}
	}
	c, err := dialVersion(a, "")
	if err != nil {
		a.Unpin()
		return nil, a, fmt.Errorf("%w: %w", isolator.ErrUnavailable, err)
	}
	pctx, stop := context.WithTimeout(ctx, pingTimeout)
	conn := &engineConn{c: c, addr: a, wait: true, stop: stop, owner: true}
	conn.says = fetch(func() (engineSays, error) { return pingVerdict(pctx, ctx, c, a) })
	return conn, a, nil
}

// pingTimeout bounds an engine's answer to its ping: a Docker engine answers /_ping
// without work of its own (milliseconds), so one that has not answered by then is
// refused as not answering.
const pingTimeout = 30 * time.Second

// speaking returns a client of c's engine that speaks API version at once (a recorded
// one, headstart.go), sharing c's pinned socket and verdict: its requests wait for
// the verdict as c's do, unless dockerd itself listens on c's socket
// (Address.EngineListens), which no other engine's API can be. c's Close closes the
// pinned socket; the caller closes the client too.
func (c *engineConn) speaking(version string) (*engineConn, error) {
	sc, err := dialVersion(c.addr, version)
	if err != nil {
		return nil, err
	}
	return &engineConn{c: sc, addr: c.addr, says: c.says, wait: !c.addr.EngineListens(), stop: func() {}}, nil
}

// dialVersion returns a client for a that speaks API version (without asking the
// engine), or negotiates when version is "". A pinned a's client connects through
// the pinned socket only. Only connect and speaking call it.
func dialVersion(a Address, version string) (*client.Client, error) {
	opts := []client.Opt{client.WithHost(a.Host), client.WithAPIVersionNegotiation()}
	if a.Pinned() {
		// As the client's own dialler, through the pinned socket; the closure holds
		// a, so the socket stays open while the client can dial, until connect's
		// connection is closed (engineConn.Close).
		d := net.Dialer{Timeout: 32 * time.Second}
		opts = append(opts, client.WithDialContext(func(ctx context.Context, _, _ string) (net.Conn, error) {
			return a.DialUnix(ctx, &d)
		}))
	}
	if version != "" {
		opts = append(opts, client.WithVersion(version))
	}
	if a.TLS != "" {
		opts = append(opts, client.WithTLSClientConfig(a.CACert, a.Cert, a.Key))
	}
	c, err := client.NewClientWithOpts(opts...)
	if err != nil && a.TLS != "" {
		return nil, fmt.Errorf("docker engine %s (%s): %w (from %s): %w", a.Host, a.Origin, errTLSMaterial, a.TLS, err)
	}
	if err != nil {
		return nil, fmt.Errorf("docker engine %s (%s): %w", a.Host, a.Origin, err)
	}
	return c, nil
}

// ErrNoEngine is wrapped when the engine does not answer (its socket is not there to
// be pinned, or is not a socket).
var ErrNoEngine = errors.New("docker engine not reachable")
