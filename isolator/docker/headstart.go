package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"sync"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// A run's first requests depend on its settings and on two names of its Plan only:
// the engine's address (settings and environment), docker.image, the kept container
// (the project's name) and the derived-image cache (the state directory). devsandbox
// starts this program while it plans; the program is often up only after the request
// was sent, and decoding the Plan and starting the run take it a millisecond or two.
// So the request's head (handoff.HeadStart) starts those requests: the engine's API
// version (the client's ping), the inspects of docker.image and of the kept container,
// and the reading of the cache, while the Plan is decoded. They only look; the run
// uses their answers as it uses the ones asked for as it starts (ahead.go), and only
// when its settings are the ones the head start had (the same request).

// headStart is the work a request's head started.
type headStart struct {
	settings json.RawMessage
	engine   Engine
	addr     Address
	image    *future[image.InspectResponse]
	// keptName is the kept container kept's inspect is of ("": none asked for).
	keptName string
	kept     *future[dockercontainer.InspectResponse]
	// cachePath is the derived-image cache cache read ("": none).
	cachePath string
	cache     *future[map[string]string]
}

// headStarts hands the head start of the program's one request to its run.
type headStarts struct {
	mu sync.Mutex
	hs *headStart
}

// start is the program's handoff.HeadStart: for a run, it connects to the engine the
// settings name and starts the requests above.
func (h *headStarts) start(op string, settings, plan json.RawMessage) {
	if op != handoff.OpRun {
		return
	}
	var s helper.Settings
	if json.Unmarshal(settings, &s) != nil {
		return
	}
	var head struct {
		Project  struct{ Name string }
		StateDir string
	}
	if json.Unmarshal(plan, &head) != nil {
		return
	}
	b := New(s, environ())
	e, addr, err := b.engine()
	if err != nil {
		return // the run finds it again and says why
	}
	ctx := context.Background()
	hs := &headStart{settings: bytes.Clone(settings), engine: e, addr: addr}
	hs.image = fetch(func() (image.InspectResponse, error) { return e.ImageInspect(ctx, s.Image) })
	if s.Keep && head.Project.Name != "" {
		hs.keptName = "devsandbox-" + head.Project.Name
		hs.kept = fetch(func() (dockercontainer.InspectResponse, error) { return e.ContainerInspect(ctx, hs.keptName) })
	}
	if head.StateDir != "" {
		hs.cachePath = filepath.Join(filepath.Dir(head.StateDir), derivedCacheFile)
		hs.cache = fetch(func() (map[string]string, error) { return readDerivedCache(hs.cachePath), nil })
	}
	h.mu.Lock()
	h.hs = hs
	h.mu.Unlock()
}

// take returns the head start of a request with settings (once), or nil.
func (h *headStarts) take(settings json.RawMessage) *headStart {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := h.hs
	if hs == nil {
		return nil
	}
	h.hs = nil
	if !bytes.Equal(hs.settings, settings) {
		hs.close()
		return nil
	}
	return hs
}

// close waits for the head start's requests and closes its engine client (a run
// that did not take it).
func (hs *headStart) close() {
	if hs.image != nil {
		_, _ = hs.image.get()
	}
	if hs.kept != nil {
		_, _ = hs.kept.get()
	}
	_ = hs.engine.Close()
}

// keptInspect is the head start's inspect of the container name, if it is the one
// asked for (once).
func (hs *headStart) keptInspect(name string) *future[dockercontainer.InspectResponse] {
	if hs == nil || hs.kept == nil || hs.keptName != name {
		return nil
	}
	f := hs.kept
	hs.kept = nil
	return f
}

// derivedCache is the head start's reading of the derived-image cache at path, if it
// is that file (once).
func (hs *headStart) derivedCache(path string) map[string]string {
	if hs == nil || hs.cache == nil || hs.cachePath != path {
		return nil
	}
	m, _ := hs.cache.get()
	hs.cache = nil
	return m
}
