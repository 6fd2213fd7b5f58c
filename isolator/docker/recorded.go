package docker

import (
	"context"
	"io"
	"sync"

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

// recordedEngine is the run's Engine when an API version was recorded for the engine
// (headstart.go): the run starts at once, without waiting for the ping, but nothing
// spoken in the recorded version is acted on before the version is settled:
//
//   - it is accepted only when the engine's ping gives the version the negotiating
//     client would speak (the requests are then the ones that client sends). An older
//     version the engine still accepts is not: API versions change what a request
//     means (from 1.44 a read-only bind is read-only recursively), and the run must
//     mean what a negotiated run means;
//   - it is refused when the ping gives another version or fails (an engine that
//     refuses a request's version, HTTP 400 "client version ... is too new/old", gives
//     another version at its ping).
//
// A read (an inspect, a list) goes out in the recorded version at once; its answer
// is returned once the version is accepted, and the read is asked again of the
// negotiating client when it is refused. A request with a side effect (a creation,
// a start, a removal, a copy, an exec, an attach, a build) waits until the version
// is settled, and goes out in the recorded version only when it was accepted; so a
// refused version never created, started or removed anything, and nothing is sent
// twice. The negotiating client negotiates with the ping the head start sent.
type recordedEngine struct {
	spec Engine // speaks the recorded version
	neg  Engine // negotiates (its ping is the head start's)
	// version, when set, is the head start's ping (Close waits for it: it uses neg).
	version *future[string]

	once    sync.Once
	settled chan struct{}
	ok      bool
}

func newRecordedEngine(spec, neg Engine) *recordedEngine {
	return &recordedEngine{spec: spec, neg: neg, settled: make(chan struct{})}
}

// settle decides whether the recorded version is spoken (the first decision stays).
func (r *recordedEngine) settle(ok bool) {
	r.once.Do(func() {
		r.ok = ok
		close(r.settled)
	})
}

// settledEngine waits until the version is settled and returns the client to speak.
func (r *recordedEngine) settledEngine(ctx context.Context) (Engine, error) {
	select {
	case <-r.settled:
	default:
		select {
		case <-r.settled:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if r.ok {
		return r.spec, nil
	}
	return r.neg, nil
}

// read asks f in the recorded version at once and returns its answer once the version
// is accepted; when it is refused, f is asked of the negotiating client. Only the
// head start's ping settles the version, even when the engine already refused it
// here: the negotiating client is used only after that ping negotiated it (the
// ping's goroutine writes the client's version, which its requests read unlocked).
func read[T any](ctx context.Context, r *recordedEngine, f func(Engine) (T, error)) (T, error) {
	select {
	case <-r.settled:
		e, _ := r.settledEngine(ctx) // settled: no error
		return f(e)
	default:
	}
	v, err := f(r.spec)
	e, cerr := r.settledEngine(ctx)
	if cerr != nil {
		var zero T
		return zero, cerr
	}
	if e == r.spec {
		return v, err
	}
	return f(e)
}

// act sends f, which has a side effect, once the version is settled.
func act[T any](ctx context.Context, r *recordedEngine, f func(Engine) (T, error)) (T, error) {
	e, err := r.settledEngine(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(e)
}

// Close implements Engine: it closes both clients once the head start's ping is done.
func (r *recordedEngine) Close() error {
	if r.version != nil {
		_, _ = r.version.get()
	}
	_ = r.neg.Close()
	return r.spec.Close()
}

// The reads.

// Ping implements Engine: /_ping has no API version in its path, so the recorded
// client's answer is the one the negotiating client would get.
func (r *recordedEngine) Ping(ctx context.Context) (types.Ping, error) {
	return r.spec.Ping(ctx)
}

func (r *recordedEngine) ServerVersion(ctx context.Context) (types.Version, error) {
	return read(ctx, r, func(e Engine) (types.Version, error) { return e.ServerVersion(ctx) })
}

func (r *recordedEngine) Info(ctx context.Context) (system.Info, error) {
	return read(ctx, r, func(e Engine) (system.Info, error) { return e.Info(ctx) })
}

func (r *recordedEngine) ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error) {
	return read(ctx, r, func(e Engine) (image.InspectResponse, error) { return e.ImageInspect(ctx, ref, opts...) })
}

func (r *recordedEngine) ContainerInspect(ctx context.Context, id string) (dockercontainer.InspectResponse, error) {
	return read(ctx, r, func(e Engine) (dockercontainer.InspectResponse, error) { return e.ContainerInspect(ctx, id) })
}

func (r *recordedEngine) ContainerList(ctx context.Context, options dockercontainer.ListOptions) ([]dockercontainer.Summary, error) {
	return read(ctx, r, func(e Engine) ([]dockercontainer.Summary, error) { return e.ContainerList(ctx, options) })
}

func (r *recordedEngine) ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error) {
	return read(ctx, r, func(e Engine) ([]image.Summary, error) { return e.ImageList(ctx, options) })
}

func (r *recordedEngine) ContainerExecInspect(ctx context.Context, execID string) (dockercontainer.ExecInspect, error) {
	return read(ctx, r, func(e Engine) (dockercontainer.ExecInspect, error) { return e.ContainerExecInspect(ctx, execID) })
}

func (r *recordedEngine) VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error) {
	return read(ctx, r, func(e Engine) (volume.ListResponse, error) { return e.VolumeList(ctx, options) })
}

func (r *recordedEngine) VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error) {
	return read(ctx, r, func(e Engine) (volume.Volume, error) { return e.VolumeInspect(ctx, volumeID) })
}

// The requests with side effects.

func (r *recordedEngine) ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	return act(ctx, r, func(e Engine) (build.ImageBuildResponse, error) { return e.ImageBuild(ctx, buildContext, options) })
}

func (r *recordedEngine) ContainerCreate(ctx context.Context, config *dockercontainer.Config, hostConfig *dockercontainer.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	return act(ctx, r, func(e Engine) (dockercontainer.CreateResponse, error) {
		return e.ContainerCreate(ctx, config, hostConfig, networkingConfig, platform, name)
	})
}

func (r *recordedEngine) ContainerAttach(ctx context.Context, id string, options dockercontainer.AttachOptions) (types.HijackedResponse, error) {
	return act(ctx, r, func(e Engine) (types.HijackedResponse, error) { return e.ContainerAttach(ctx, id, options) })
}

func (r *recordedEngine) ContainerStart(ctx context.Context, id string, options dockercontainer.StartOptions) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.ContainerStart(ctx, id, options) })
	return err
}

func (r *recordedEngine) ContainerWait(ctx context.Context, id string, condition dockercontainer.WaitCondition) (<-chan dockercontainer.WaitResponse, <-chan error) {
	e, err := r.settledEngine(ctx)
	if err != nil {
		errc := make(chan error, 1)
		errc <- err
		return make(chan dockercontainer.WaitResponse), errc
	}
	return e.ContainerWait(ctx, id, condition)
}

func (r *recordedEngine) ContainerPause(ctx context.Context, id string) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.ContainerPause(ctx, id) })
	return err
}

func (r *recordedEngine) ContainerUnpause(ctx context.Context, id string) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.ContainerUnpause(ctx, id) })
	return err
}

func (r *recordedEngine) ContainerRemove(ctx context.Context, id string, options dockercontainer.RemoveOptions) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.ContainerRemove(ctx, id, options) })
	return err
}

func (r *recordedEngine) CopyToContainer(ctx context.Context, id, dstPath string, content io.Reader, options dockercontainer.CopyToContainerOptions) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) {
		return struct{}{}, e.CopyToContainer(ctx, id, dstPath, content, options)
	})
	return err
}

func (r *recordedEngine) ContainerCommit(ctx context.Context, id string, options dockercontainer.CommitOptions) (dockercontainer.CommitResponse, error) {
	return act(ctx, r, func(e Engine) (dockercontainer.CommitResponse, error) { return e.ContainerCommit(ctx, id, options) })
}

func (r *recordedEngine) ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error) {
	return act(ctx, r, func(e Engine) (image.LoadResponse, error) { return e.ImageLoad(ctx, input, opts...) })
}

func (r *recordedEngine) ImageRemove(ctx context.Context, id string, options image.RemoveOptions) ([]image.DeleteResponse, error) {
	return act(ctx, r, func(e Engine) ([]image.DeleteResponse, error) { return e.ImageRemove(ctx, id, options) })
}

func (r *recordedEngine) ImageTag(ctx context.Context, source, target string) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.ImageTag(ctx, source, target) })
	return err
}

func (r *recordedEngine) ContainerExecCreate(ctx context.Context, id string, options dockercontainer.ExecOptions) (dockercontainer.ExecCreateResponse, error) {
	return act(ctx, r, func(e Engine) (dockercontainer.ExecCreateResponse, error) {
		return e.ContainerExecCreate(ctx, id, options)
	})
}

func (r *recordedEngine) ContainerExecAttach(ctx context.Context, execID string, config dockercontainer.ExecAttachOptions) (types.HijackedResponse, error) {
	return act(ctx, r, func(e Engine) (types.HijackedResponse, error) { return e.ContainerExecAttach(ctx, execID, config) })
}

func (r *recordedEngine) VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error) {
	return act(ctx, r, func(e Engine) (volume.Volume, error) { return e.VolumeCreate(ctx, options) })
}

func (r *recordedEngine) VolumeRemove(ctx context.Context, volumeID string, force bool) error {
	_, err := act(ctx, r, func(e Engine) (struct{}, error) { return struct{}{}, e.VolumeRemove(ctx, volumeID, force) })
	return err
}

var _ Engine = (*recordedEngine)(nil)
