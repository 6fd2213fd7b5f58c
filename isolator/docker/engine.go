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

// Engine is the part of the Docker Engine API the backend uses; *client.Client
// implements it. Everything it calls exists in API 1.41 (Docker 20.10).
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

var _ Engine = (*client.Client)(nil)

// Dial returns a client for a, negotiating the API version down to the engine's,
// and a with its Unix socket pinned (engineaddr.Address.Pin): the client's every
// connection, and the returned address's HostNetwork check, go to the socket that
// was opened here, whatever is at its path later.
func Dial(a Address) (Engine, Address, error) {
	a, err := a.Pin()
	if errors.Is(err, engineaddr.ErrPlanted) {
		return nil, a, fmt.Errorf("%w: %w", isolator.ErrProtection, err)
	}
	if err != nil {
		st := engineDown(a, err)
		return nil, a, fmt.Errorf("%w: %s; %s", ErrNoEngine, st.Reason, st.Fix)
	}
	c, err := dialVersion(a, "")
	if err != nil {
		a.Unpin()
		return nil, a, err
	}
	if !a.Pinned() {
		return c, a, nil
	}
	return &pinnedClient{Client: c, addr: a}, a, nil
}

// pinnedClient is a client that dials a's pinned socket and, when closed, closes
// that socket too (Address.Unpin, shared by every copy of a): a process that makes
// many runs holds none of their sockets once each client is closed.
type pinnedClient struct {
	*client.Client
	addr Address
}

// Close closes the client and the pinned socket.
func (c *pinnedClient) Close() error {
	err := c.Client.Close()
	c.addr.Unpin()
	return err
}

// clientOf is the Docker client behind e (Dial's), or false for another Engine.
func clientOf(e Engine) (*client.Client, bool) {
	switch c := e.(type) {
	case *client.Client:
		return c, true
	case *pinnedClient:
		return c.Client, true
	}
	return nil, false
}

// dialVersion returns a client for a that speaks API version (without asking the
// engine), or negotiates when version is "". A pinned a's client connects through
// the pinned socket only.
func dialVersion(a Address, version string) (*client.Client, error) {
	opts := []client.Opt{client.WithHost(a.Host), client.WithAPIVersionNegotiation()}
	if a.Pinned() {
		// As the client's own dialler, through the pinned socket; the closure holds
		// a, so the socket stays open while the client can dial, until Dial's client
		// is closed (pinnedClient.Close).
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
