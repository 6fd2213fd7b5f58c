package docker

import (
	"context"
	"sync"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// A run's first requests do not depend on the host work before them (services, pins,
// the layout): the inspects of docker.image and of the kept container are asked for as
// the run starts, and their round trips overlap that work.

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
}

// inspectAhead starts inspecting the image ref on e.
func inspectAhead(ctx context.Context, e Engine, ref string) *aheadEngine {
	return &aheadEngine{Engine: e, ref: ref, image: fetch(func() (image.InspectResponse, error) { return e.ImageInspect(ctx, ref) })}
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
