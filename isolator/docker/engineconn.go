package docker

import (
	"context"
	"io"
	"net"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// engineConn is connect's connection to an engine: a Docker client whose every
// request waits for the engine's verdict (its answer to the ping connect sent) and
// is refused unless that showed a Docker engine. A method of the Engine interface
// that did not wait would be a way around the verdict: each one here waits.
type engineConn struct {
	c    *client.Client
	addr Address
	// says is the engine's answer to the ping, its error the refusal
	// (pingVerdict).
	says *future[engineSays]
	// wait: requests wait for the verdict. Only a client that speaks a set version
	// on a socket dockerd itself listens on does not (speaking).
	wait bool
	// stop ends the ping; owner: Close closes the pinned socket too.
	stop  context.CancelFunc
	owner bool
}

// ready waits for the engine's verdict (or the end of ctx) and returns the refusal,
// or nil for a Docker engine.
func (c *engineConn) ready(ctx context.Context) error {
	if !c.wait {
		return nil
	}
	select {
	case <-c.says.done:
	case <-ctx.Done():
		select {
		case <-c.says.done:
		default:
			return ctx.Err()
		}
	}
	return c.says.err
}

// clientVersion is the API version the client speaks (negotiated once the verdict
// is in).
func (c *engineConn) clientVersion() string { return c.c.ClientVersion() }

// Close ends the ping, waits for it, and closes the client and, for connect's own
// connection, the pinned socket (Address.Unpin, shared by every copy of the
// address): a process that makes many runs holds none of their sockets once each
// connection is closed.
func (c *engineConn) Close() error {
	c.stop()
	if c.owner {
		_, _ = c.says.get()
	}
	err := c.c.Close()
	if c.owner {
		c.addr.Unpin()
	}
	return err
}

// Dialer is the client's dialler of raw streams (the connections attach and exec
// hijack), each once the engine's verdict is in and refused like every request.
func (c *engineConn) Dialer() func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		if err := c.ready(ctx); err != nil {
			return nil, err
		}
		return c.c.Dialer()(ctx)
	}
}

func (c *engineConn) ContainerWait(ctx context.Context, id string, condition dockercontainer.WaitCondition) (<-chan dockercontainer.WaitResponse, <-chan error) {
	if err := c.ready(ctx); err != nil {
		errs := make(chan error, 1)
		errs <- err
		return make(chan dockercontainer.WaitResponse), errs
	}
	return c.c.ContainerWait(ctx, id, condition)
}

func (c *engineConn) Ping(ctx context.Context) (types.Ping, error) {
	if err := c.ready(ctx); err != nil {
		var zero types.Ping
		return zero, err
	}
	return c.c.Ping(ctx)
}

func (c *engineConn) ServerVersion(ctx context.Context) (types.Version, error) {
	if err := c.ready(ctx); err != nil {
		var zero types.Version
		return zero, err
	}
	return c.c.ServerVersion(ctx)
}

func (c *engineConn) Info(ctx context.Context) (system.Info, error) {
	if err := c.ready(ctx); err != nil {
		var zero system.Info
		return zero, err
	}
	return c.c.Info(ctx)
}

func (c *engineConn) ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero image.InspectResponse
		return zero, err
	}
	return c.c.ImageInspect(ctx, ref, opts...)
}

func (c *engineConn) ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero build.ImageBuildResponse
		return zero, err
	}
	return c.c.ImageBuild(ctx, buildContext, options)
}

func (c *engineConn) ContainerCreate(ctx context.Context, config *dockercontainer.Config, hostConfig *dockercontainer.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero dockercontainer.CreateResponse
		return zero, err
	}
	return c.c.ContainerCreate(ctx, config, hostConfig, networkingConfig, platform, name)
}

func (c *engineConn) ContainerAttach(ctx context.Context, id string, options dockercontainer.AttachOptions) (types.HijackedResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero types.HijackedResponse
		return zero, err
	}
	return c.c.ContainerAttach(ctx, id, options)
}

func (c *engineConn) ContainerStart(ctx context.Context, id string, options dockercontainer.StartOptions) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.ContainerStart(ctx, id, options)
}

func (c *engineConn) ContainerPause(ctx context.Context, id string) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.ContainerPause(ctx, id)
}

func (c *engineConn) ContainerUnpause(ctx context.Context, id string) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.ContainerUnpause(ctx, id)
}

func (c *engineConn) ContainerInspect(ctx context.Context, id string) (dockercontainer.InspectResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero dockercontainer.InspectResponse
		return zero, err
	}
	return c.c.ContainerInspect(ctx, id)
}

func (c *engineConn) ContainerList(ctx context.Context, options dockercontainer.ListOptions) ([]dockercontainer.Summary, error) {
	if err := c.ready(ctx); err != nil {
		var zero []dockercontainer.Summary
		return zero, err
	}
	return c.c.ContainerList(ctx, options)
}

func (c *engineConn) ContainerRemove(ctx context.Context, id string, options dockercontainer.RemoveOptions) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.ContainerRemove(ctx, id, options)
}

func (c *engineConn) CopyToContainer(ctx context.Context, id, dstPath string, content io.Reader, options dockercontainer.CopyToContainerOptions) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.CopyToContainer(ctx, id, dstPath, content, options)
}

func (c *engineConn) ContainerCommit(ctx context.Context, id string, options dockercontainer.CommitOptions) (dockercontainer.CommitResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero dockercontainer.CommitResponse
		return zero, err
	}
	return c.c.ContainerCommit(ctx, id, options)
}

func (c *engineConn) ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero image.LoadResponse
		return zero, err
	}
	return c.c.ImageLoad(ctx, input, opts...)
}

func (c *engineConn) ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error) {
	if err := c.ready(ctx); err != nil {
		var zero []image.Summary
		return zero, err
	}
	return c.c.ImageList(ctx, options)
}

func (c *engineConn) ImageRemove(ctx context.Context, id string, options image.RemoveOptions) ([]image.DeleteResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero []image.DeleteResponse
		return zero, err
	}
	return c.c.ImageRemove(ctx, id, options)
}

func (c *engineConn) ImageTag(ctx context.Context, source, target string) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.ImageTag(ctx, source, target)
}

func (c *engineConn) ContainerExecCreate(ctx context.Context, id string, options dockercontainer.ExecOptions) (dockercontainer.ExecCreateResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero dockercontainer.ExecCreateResponse
		return zero, err
	}
	return c.c.ContainerExecCreate(ctx, id, options)
}

func (c *engineConn) ContainerExecAttach(ctx context.Context, execID string, config dockercontainer.ExecAttachOptions) (types.HijackedResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero types.HijackedResponse
		return zero, err
	}
	return c.c.ContainerExecAttach(ctx, execID, config)
}

func (c *engineConn) ContainerExecInspect(ctx context.Context, execID string) (dockercontainer.ExecInspect, error) {
	if err := c.ready(ctx); err != nil {
		var zero dockercontainer.ExecInspect
		return zero, err
	}
	return c.c.ContainerExecInspect(ctx, execID)
}

func (c *engineConn) VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error) {
	if err := c.ready(ctx); err != nil {
		var zero volume.Volume
		return zero, err
	}
	return c.c.VolumeCreate(ctx, options)
}

func (c *engineConn) VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error) {
	if err := c.ready(ctx); err != nil {
		var zero volume.ListResponse
		return zero, err
	}
	return c.c.VolumeList(ctx, options)
}

func (c *engineConn) VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error) {
	if err := c.ready(ctx); err != nil {
		var zero volume.Volume
		return zero, err
	}
	return c.c.VolumeInspect(ctx, volumeID)
}

func (c *engineConn) VolumeRemove(ctx context.Context, volumeID string, force bool) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.c.VolumeRemove(ctx, volumeID, force)
}
