package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
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
// So the request's head (handoff.HeadStart) starts those requests, and the reading of
// the cache, while the Plan is decoded. They only look; the run uses their answers as
// it uses the ones asked for as it starts (ahead.go), and only when its settings are
// the ones the head start had (the same request).
//
// The client's first request waits for the engine's API version (a ping). The version
// it negotiated with an engine is recorded (apiVersionFile, by address); with a
// recorded version, the head start's requests are sent in it at once, beside the ping,
// and the run starts without waiting for the ping: its client (recordedEngine) hands
// out answers asked for in that version only once the ping confirms it (the requests
// were then the ones the negotiated client sends), sends nothing with a side effect
// before then, and asks again in the negotiated version when the ping does not confirm
// it or the engine refuses it; the record is then updated.

// apiVersionFile, beside the derived-image cache, records per engine address the API
// version the client negotiated there (a hint: a wrong one costs a round trip).
const apiVersionFile = "docker-api.json"

// headStart is the work a request's head started.
type headStart struct {
	settings json.RawMessage
	// cancel ends the head start's requests (their context is not a run's: the run
	// that takes them ends them with its own, bind).
	cancel context.CancelFunc
	// engine negotiates its API version; rec, when set, speaks the recorded one
	// until the ping settles it, and version is the negotiated version (the ping).
	engine   Engine
	rec      *recordedEngine
	recorded string
	version  *future[string]
	// says is the engine's answer to that ping (podmanping.go).
	says  *future[engineSays]
	addr  Address
	image *future[image.InspectResponse]
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
	if json.Unmarshal(plan, &head) != nil || head.StateDir == "" {
		return
	}
	b := New(s, environ())
	// The head start's requests end with the run that takes them (bind), or when
	// none does (close).
	ctx, cancel := context.WithCancel(context.Background())
	e, addr, says, err := b.connect(ctx)
	if err != nil {
		cancel()
		return // the run finds it again and says why
	}
	dir := filepath.Dir(head.StateDir)
	hs := &headStart{settings: bytes.Clone(settings), cancel: cancel, engine: e, addr: addr, says: says}
	ask := e
	conn, ok := e.(*engineConn)
	versions := filepath.Join(dir, apiVersionFile)
	if ok {
		hs.recorded = readRecords(versions)[addr.Host]
		if apiVersionForm(hs.recorded) {
			if sc, err := conn.speaking(hs.recorded); err == nil {
				hs.rec = newRecordedEngine(sc, e)
				ask = hs.rec
			}
		}
	}
	// The connection's ping (connect) was sent as it was made, its answer the
	// engine's verdict. Without a recorded version to speak at once, the inspects
	// wait for it (the client's own negotiation would make them wait for its ping);
	// with one, they wait only where the engine's API is not known to be Docker's
	// (speaking).
	spec := hs.rec != nil
	negotiated := func() {
		if !spec && hs.says != nil {
			_, _ = hs.says.get()
		}
	}
	img := fetch(func() (image.InspectResponse, error) { negotiated(); return ask.ImageInspect(ctx, s.Image) })
	hs.image = img
	if s.Keep && head.Project.Name != "" {
		name := keptNameOf(head.Project.Name)
		hs.keptName = name
		hs.kept = fetch(func() (dockercontainer.InspectResponse, error) { negotiated(); return ask.ContainerInspect(ctx, name) })
	}
	if ok {
		hs.version = fetch(func() (string, error) {
			if _, err := hs.says.get(); err != nil {
				if spec {
					hs.rec.settle(false)
				}
				return "", err
			}
			v := conn.clientVersion()
			if spec {
				hs.rec.settle(v == hs.recorded)
			}
			if v != hs.recorded {
				writeRecord(versions, addr.Host, v)
			}
			return v, nil
		})
		if spec {
			hs.rec.version = hs.version
		}
	}
	hs.cachePath = filepath.Join(dir, derivedCacheFile)
	hs.cache = fetch(func() (map[string]string, error) { return readRecords(hs.cachePath), nil })
	go warmEncoders()
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

// bind ends the head start's requests (the ping, the inspects) when the run's ctx
// ends, as the run's own requests end: otherwise a run on an engine that does not
// answer waits for them for ever as it returns (ahead.wait, Close). release, called
// once the run is done with them, ends them too.
func (hs *headStart) bind(ctx context.Context) (release func()) {
	stop := context.AfterFunc(ctx, hs.cancel)
	return func() {
		stop()
		hs.cancel()
	}
}

// pick returns the client the run uses (the caller closes it), at once: with a
// recorded version, the one that speaks it until the ping settles it (recordedEngine),
// and the negotiating one otherwise.
func (hs *headStart) pick() Engine {
	if hs.rec == nil {
		return hs.engine
	}
	return hs.rec
}

// drop waits for the head start's requests and forgets their answers.
func (hs *headStart) drop() {
	if hs.image != nil {
		_, _ = hs.image.get()
		hs.image = nil
	}
	if hs.kept != nil {
		_, _ = hs.kept.get()
		hs.kept = nil
	}
}

// close waits for the head start's requests and closes its clients (a run that did
// not take it): their answers are no one's, so they are ended first.
func (hs *headStart) close() {
	hs.cancel()
	hs.drop()
	if hs.version != nil {
		_, _ = hs.version.get()
	}
	if hs.rec != nil {
		_ = hs.rec.Close()
		return
	}
	_ = hs.engine.Close()
}

// negotiated returns the API version the head start's client negotiated with the
// engine (its ping, sent as the request arrived), once that ping answered, and
// whether there is one. It is the engine's newest version or this client's newest,
// whichever is older: this client's is newer than SubpathAPI, so it tells an engine
// that mounts sub-paths from one that does not as the engine's own version does.
func (hs *headStart) negotiated() (string, bool) {
	if hs == nil || hs.version == nil {
		return "", false
	}
	v, err := hs.version.get()
	return v, err == nil && apiVersionForm(v)
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

// apiVersionForm reports whether v looks like an API version ("1.41"): the record is a
// file, and its version becomes part of request paths. Pure.
func apiVersionForm(v string) bool {
	a, b, ok := strings.Cut(v, ".")
	digits := func(s string) bool {
		return s != "" && len(s) <= 3 && strings.Trim(s, "0123456789") == ""
	}
	return ok && digits(a) && digits(b)
}
