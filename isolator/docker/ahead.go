package docker

import (
	"context"
	"reflect"
	"sync"

	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// A run's first requests do not depend on the host work before them (services, pins,
// the layout): the inspects of docker.image, of the kept container and of the
// engine's volumes the run binds files from (the mask and content volumes, named by
// a layout drawn as the run starts) are asked for as the run starts, and their round
// trips overlap that work. An answer asked for ahead is only a head start: the run
// asks for what it needs as it always did, and gets the answer asked for ahead when
// there is one for that name (once), or asks the engine then.

// future is an answer being fetched.
type future[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// fetch starts f; get waits for its answer.
func fetch[T any](f func() (T, error)) *future[T] {
	fu := &future[T]{done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.v, fu.err = f()
	}()
	return fu
}

func (f *future[T]) get() (T, error) {
	<-f.done
	return f.v, f.err
}

// aheadEngine is an Engine whose first ImageInspect of one image (docker.image) gets
// the answer asked for as the run started; later ones ask the engine again. That
// answer is as current as any: the image's name may name another image right after
// either inspect.
type aheadEngine struct {
	Engine
	mu    sync.Mutex
	ref   string
	image *future[image.InspectResponse]
	// volumes, once set (inspectVolumesAhead), are the volume inspects asked for
	// ahead, by name.
	volumes *future[map[string]*future[volume.Volume]]
	// containers are the container inspects asked for ahead, by name (set before
	// the run uses the engine).
	containers map[string]*future[dockercontainer.InspectResponse]
	// create is a volume creation asked for ahead (set before the run uses the
	// engine), with its options.
	create     *future[volume.Volume]
	createOpts volume.CreateOptions
	// ping is the engine's ping asked for ahead (set before the run uses the
	// engine): a plan with anchors needs the engine's API version.
	ping *future[types.Ping]
	// says, when set, is the client's negotiating ping (podmanping.go): the requests
	// asked for ahead wait for it, as they would for the client's own negotiation,
	// unless the engine speaks a recorded version at once (recordedEngine).
	says *future[engineSays]
}

// inspectAhead starts inspecting the image ref on e, once the negotiating ping says
// answered (when not nil).
func inspectAhead(ctx context.Context, e Engine, ref string, says *future[engineSays]) *aheadEngine {
	a := &aheadEngine{Engine: e, ref: ref, says: says}
	a.image = fetch(func() (image.InspectResponse, error) { a.negotiated(); return e.ImageInspect(ctx, ref) })
	return a
}

// negotiated waits for the negotiating ping, unless a speaks a recorded version.
func (a *aheadEngine) negotiated() {
	if _, rec := a.Engine.(*recordedEngine); a.says != nil && !rec {
		_, _ = a.says.get()
	}
}

// ImageInspect implements Engine.
func (a *aheadEngine) ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error) {
	a.mu.Lock()
	f := a.image
	if ref == a.ref && len(opts) == 0 {
		a.image = nil
	} else {
		f = nil
	}
	a.mu.Unlock()
	if f != nil {
		return f.get()
	}
	return a.Engine.ImageInspect(ctx, ref, opts...)
}

// inspectVolumesAhead starts inspecting the volumes that names returns, which it
// computes beside the caller.
func (a *aheadEngine) inspectVolumesAhead(ctx context.Context, names func() []string) {
	a.volumes = fetch(func() (map[string]*future[volume.Volume], error) {
		m := map[string]*future[volume.Volume]{}
		a.negotiated()
		for _, n := range names() {
			if m[n] == nil {
				m[n] = fetch(func() (volume.Volume, error) { return a.Engine.VolumeInspect(ctx, n) })
			}
		}
		return m, nil
	})
}

// VolumeInspect implements Engine: the first inspect of a volume asked for ahead
// gets that answer; later ones, and other volumes, ask the engine.
func (a *aheadEngine) VolumeInspect(ctx context.Context, name string) (volume.Volume, error) {
	var f *future[volume.Volume]
	if a.volumes != nil {
		m, _ := a.volumes.get()
		a.mu.Lock()
		f = m[name]
		delete(m, name)
		a.mu.Unlock()
	}
	if f != nil {
		return f.get()
	}
	return a.Engine.VolumeInspect(ctx, name)
}

// inspectContainerAhead starts inspecting the container name. Call it before the run
// uses a.
func (a *aheadEngine) inspectContainerAhead(ctx context.Context, name string) {
	if a.containers == nil {
		a.containers = map[string]*future[dockercontainer.InspectResponse]{}
	}
	a.containers[name] = fetch(func() (dockercontainer.InspectResponse, error) {
		a.negotiated()
		return a.Engine.ContainerInspect(ctx, name)
	})
}

// ContainerInspect implements Engine: the first inspect of a container asked for
// ahead gets that answer; later ones, and other containers, ask the engine. The
// answer may be older than a lock the caller took since: see keptCompanion.
func (a *aheadEngine) ContainerInspect(ctx context.Context, name string) (dockercontainer.InspectResponse, error) {
	a.mu.Lock()
	f := a.containers[name]
	delete(a.containers, name)
	a.mu.Unlock()
	if f != nil {
		return f.get()
	}
	return a.Engine.ContainerInspect(ctx, name)
}

// createVolumeAhead starts creating the volume opts names (a creation of a volume
// that exists with the same options changes nothing). Call it before the run uses a.
func (a *aheadEngine) createVolumeAhead(ctx context.Context, opts volume.CreateOptions) {
	a.createOpts = opts
	a.create = fetch(func() (volume.Volume, error) {
		// Sent once the engine's verdict is in, refused unless it is a Docker
		// engine (connect): never to Podman's API.
		return a.Engine.VolumeCreate(ctx, opts)
	})
}

// VolumeCreate implements Engine: the first creation with the options of the one
// asked for ahead gets its answer; others ask the engine.
func (a *aheadEngine) VolumeCreate(ctx context.Context, opts volume.CreateOptions) (volume.Volume, error) {
	a.mu.Lock()
	f := a.create
	if f != nil && reflect.DeepEqual(opts, a.createOpts) {
		a.create = nil
	} else {
		f = nil
	}
	a.mu.Unlock()
	if f != nil {
		return f.get()
	}
	return a.Engine.VolumeCreate(ctx, opts)
}

// pingAhead starts pinging the engine. Call it before the run uses a.
func (a *aheadEngine) pingAhead(ctx context.Context) {
	a.ping = fetch(func() (types.Ping, error) {
		if a.says != nil {
			// The negotiating ping's answer, when it came (the engine's version
			// does not change within a run).
			if s, err := a.says.get(); err == nil {
				return s.ping, nil
			}
		}
		return a.Engine.Ping(ctx)
	})
}

// Ping implements Engine: the first ping gets the answer asked for ahead; later ones
// ask the engine.
func (a *aheadEngine) Ping(ctx context.Context) (types.Ping, error) {
	a.mu.Lock()
	f := a.ping
	a.ping = nil
	a.mu.Unlock()
	if f != nil {
		return f.get()
	}
	return a.Engine.Ping(ctx)
}

// wait returns once every request asked for ahead has been answered (or failed), so
// that nothing of the run's is still at work when it returns.
func (a *aheadEngine) wait() {
	a.mu.Lock()
	image, create, ping := a.image, a.create, a.ping
	var cs []*future[dockercontainer.InspectResponse]
	for _, f := range a.containers {
		cs = append(cs, f)
	}
	a.mu.Unlock()
	if image != nil {
		_, _ = image.get()
	}
	if create != nil {
		_, _ = create.get()
	}
	if ping != nil {
		_, _ = ping.get()
	}
	for _, f := range cs {
		_, _ = f.get()
	}
	if a.volumes != nil {
		m, _ := a.volumes.get()
		a.mu.Lock()
		var vs []*future[volume.Volume]
		for _, f := range m {
			vs = append(vs, f)
		}
		a.mu.Unlock()
		for _, f := range vs {
			_, _ = f.get()
		}
	}
}
