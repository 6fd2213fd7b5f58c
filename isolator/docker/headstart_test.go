package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// apiEngine is an engine on a Unix socket whose API versions are min to version, as
// an engine's are: it answers the ping (with version), docker.image's inspect (an ID
// naming the version asked in), the kept container's (404) and the creations of
// containers, execs and volumes (IDs naming the version), refuses other versions as an
// engine does (400 "client version ... is too new"), and records the requests. While
// hold is set, the ping's answer waits until it is closed.
type apiEngine struct {
	host    string
	mu      sync.Mutex
	version string
	min     string
	hold    chan struct{}
	reqs    []string
}

func newAPIEngine(t *testing.T, version string) *apiEngine {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsb-api-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	a := &apiEngine{host: "unix://" + sock, version: version, min: "1.24"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.reqs = append(a.reqs, r.Method+" "+r.URL.Path)
		v, lo, hold := a.version, a.min, a.hold
		a.mu.Unlock()
		w.Header().Set("Api-Version", v)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/_ping" {
			if hold != nil {
				<-hold
			}
			return
		}
		rv, p, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v"), "/")
		p = "/" + p
		if versions.GreaterThan(rv, v) || versions.LessThan(rv, lo) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprintf(w, `{"message":"client version %s is too new. Maximum supported API version is %s"}`, rv, v)
			return
		}
		switch {
		case r.Method == http.MethodGet && p == "/images/busybox/json":
			_, _ = w.Write([]byte(`{"Id":"sha256:busybox-` + rv + `"}`))
		case r.Method == http.MethodPost && p == "/containers/create":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Id":"container-` + rv + `"}`))
		case r.Method == http.MethodPost && strings.HasSuffix(p, "/exec"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Id":"exec-` + rv + `"}`))
		case r.Method == http.MethodPost && p == "/volumes/create":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Name":"volume-` + rv + `"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"no such object"}`))
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *apiEngine) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := slices.Clone(a.reqs)
	a.reqs = nil
	slices.Sort(r)
	return r
}

// headRun gives a run's head start a request for the engine at host, in the state
// home dir, and returns the head start the run takes (with the request's settings).
func headRun(t *testing.T, host, dir string) *headStart {
	t.Helper()
	settings, _ := json.Marshal(helper.Settings{Image: "busybox", Keep: true, Host: host})
	plan, _ := json.Marshal(map[string]any{"Project": map[string]string{"Name": "proj-1"}, "StateDir": filepath.Join(dir, "proj-1")})
	var h headStarts
	h.start(handoff.OpRun, settings, plan)
	hs := h.take(settings)
	if hs == nil {
		t.Fatal("no head start for the request")
	}
	return hs
}

// A run's head start asks for docker.image and the kept container at once; with the
// engine's API version recorded, in that version beside the ping, and the run starts
// without waiting for the ping; the answers are the run's only when the ping confirms
// the version.
func TestHeadStartAPIVersion(t *testing.T) {
	a := newAPIEngine(t, "1.41")
	dir := t.TempDir()
	versions := filepath.Join(dir, apiVersionFile)

	// Nothing recorded: the client negotiates (ping first), and the version is recorded.
	hs := headRun(t, a.host, dir)
	e := hs.pick()
	in, err := hs.image.get()
	if err != nil || in.ID != "sha256:busybox-1.41" {
		t.Fatalf("image inspect: %+v, %v", in, err)
	}
	_, _ = hs.version.get()
	_, _ = hs.keptInspect("devsandbox-proj-1").get()
	e.Close()
	if got, want := a.requests(), []string{"GET /v1.41/containers/devsandbox-proj-1/json", "GET /v1.41/images/busybox/json", "HEAD /_ping"}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if got := readRecords(versions)[a.host]; got != "1.41" {
		t.Fatalf("recorded %q, want 1.41", got)
	}

	// Recorded: the requests go out in that version at once, and the run gets its
	// client while the ping is still unanswered; the version is settled only by the
	// ping, which confirms it.
	hold := make(chan struct{})
	a.mu.Lock()
	a.hold = hold
	a.mu.Unlock()
	hs = headRun(t, a.host, dir)
	if e = hs.pick(); e != Engine(hs.rec) {
		t.Fatal("the run does not use the client that speaks the recorded version")
	}
	select {
	case <-hs.rec.settled:
		t.Fatal("the recorded version was settled before the ping answered")
	default:
	}
	close(hold)
	if in, err := hs.image.get(); err != nil || in.ID != "sha256:busybox-1.41" {
		t.Fatalf("image inspect: %+v, %v", in, err)
	}
	if _, err := hs.keptInspect("devsandbox-proj-1").get(); !cerrdefs.IsNotFound(err) {
		t.Fatalf("kept container's inspect: %v", err)
	}
	if c, err := e.ContainerCreate(t.Context(), &dockercontainer.Config{Image: "busybox"}, nil, nil, nil, "c"); err != nil || c.ID != "container-1.41" {
		t.Fatalf("create: %+v, %v", c, err)
	}
	e.Close()
	if got, want := a.requests(), []string{"GET /v1.41/containers/devsandbox-proj-1/json", "GET /v1.41/images/busybox/json", "HEAD /_ping", "POST /v1.41/containers/create"}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// recordedRun runs a head start with recorded as the engine's recorded version and
// checks that the run's answers and creations are all in the version negotiation
// gives (want), that nothing with a side effect was sent in any other version (a
// refused or unconfirmed version leaves no container, exec or volume behind, and
// nothing is created twice), and that want is recorded.
func recordedRun(t *testing.T, a *apiEngine, recorded, want string) {
	t.Helper()
	dir := t.TempDir()
	versions := filepath.Join(dir, apiVersionFile)
	writeRecord(versions, a.host, recorded)
	hs := headRun(t, a.host, dir)
	e := hs.pick()
	ctx := t.Context()
	if in, err := hs.image.get(); err != nil || in.ID != "sha256:busybox-"+want {
		t.Errorf("image inspect: %+v, %v; want the answer in %s", in, err, want)
	}
	if _, err := hs.keptInspect("devsandbox-proj-1").get(); !cerrdefs.IsNotFound(err) {
		t.Errorf("kept container's inspect: %v", err)
	}
	if in, err := e.ImageInspect(ctx, "busybox"); err != nil || in.ID != "sha256:busybox-"+want {
		t.Errorf("image inspect: %+v, %v; want the answer in %s", in, err, want)
	}
	if c, err := e.ContainerCreate(ctx, &dockercontainer.Config{Image: "busybox"}, nil, nil, nil, "c"); err != nil || c.ID != "container-"+want {
		t.Errorf("create: %+v, %v", c, err)
	}
	if x, err := e.ContainerExecCreate(ctx, "c", dockercontainer.ExecOptions{Cmd: []string{"true"}}); err != nil || x.ID != "exec-"+want {
		t.Errorf("exec create: %+v, %v", x, err)
	}
	if v, err := e.VolumeCreate(ctx, volume.CreateOptions{Name: "v"}); err != nil || v.Name != "volume-"+want {
		t.Errorf("volume create: %+v, %v", v, err)
	}
	e.Close()
	var posts []string
	for _, r := range a.requests() {
		if strings.HasPrefix(r, "POST ") {
			posts = append(posts, r)
		}
	}
	if w := []string{"POST /v" + want + "/containers/c/exec", "POST /v" + want + "/containers/create", "POST /v" + want + "/volumes/create"}; !slices.Equal(posts, w) {
		t.Errorf("requests with side effects %q, want %q", posts, w)
	}
	if got := readRecords(versions)[a.host]; got != want {
		t.Errorf("recorded %q, want %s", got, want)
	}
}

// An engine moved to an older API version refuses the recorded one: the run asks again
// in the negotiated version and gets the right answers, creates nothing in the
// refused version, and the record is fixed.
func TestHeadStartVersionRefused(t *testing.T) {
	recordedRun(t, newAPIEngine(t, "1.40"), "1.41", "1.40")
}

// An upgraded engine still accepts the recorded version, but negotiation now gives
// another one: the run works, in the negotiated version (what a request means depends
// on its version: from 1.44 a read-only bind is read-only recursively), and the
// record is updated.
func TestHeadStartEngineUpgraded(t *testing.T) {
	a := newAPIEngine(t, "1.43")
	recordedRun(t, a, "1.41", "1.43")
}

// A recorded version that is not one (the record is a file) is not spoken: the client
// negotiates. One of the right form that is not the negotiated version (planted, or
// stale) is never acted on.
func TestHeadStartRecordedVersionForm(t *testing.T) {
	for v, ok := range map[string]bool{"1.41": true, "1.5": true, "10.100": true, "": false, "1": false, "1.41/containers/x/kill?": false, "v1.41": false, "1.": false, ".41": false, "1.41.1": false} {
		if apiVersionForm(v) != ok {
			t.Errorf("apiVersionForm(%q) = %v", v, !ok)
		}
	}
	a := newAPIEngine(t, "1.41")
	dir := t.TempDir()
	writeRecord(filepath.Join(dir, apiVersionFile), a.host, "1.41/containers/x")
	hs := headRun(t, a.host, dir)
	if hs.rec != nil {
		t.Fatal("a malformed recorded version was spoken")
	}
	e := hs.pick()
	_, _ = hs.image.get()
	_, _ = hs.version.get()
	e.Close()
	for _, r := range a.requests() {
		if strings.Contains(r, "containers/x") {
			t.Errorf("request %q", r)
		}
	}
	if got := readRecords(filepath.Join(dir, apiVersionFile))[a.host]; got != "1.41" {
		t.Errorf("recorded %q, want 1.41", got)
	}
	// Planted versions of the right form: older than the engine's oldest, newer than
	// its newest, and one it accepts that negotiation does not give.
	for _, v := range []string{"1.12", "1.99", "1.40"} {
		t.Run(v, func(t *testing.T) { recordedRun(t, a, v, "1.41") })
	}
}

// A head start is its request's only: another request's settings do not get it.
func TestHeadStartOtherSettings(t *testing.T) {
	a := newAPIEngine(t, "1.41")
	dir := t.TempDir()
	settings, _ := json.Marshal(helper.Settings{Image: "busybox", Host: a.host})
	plan, _ := json.Marshal(map[string]any{"StateDir": filepath.Join(dir, "p")})
	var h headStarts
	h.start(handoff.OpRun, settings, plan)
	other, _ := json.Marshal(helper.Settings{Image: "alpine", Host: a.host})
	if hs := h.take(other); hs != nil {
		t.Fatal("a head start went to a request with other settings")
	}
	if hs := h.take(settings); hs != nil {
		t.Fatal("a head start was handed out twice")
	}
	// Only runs get one.
	h.start(handoff.OpCheck, settings, plan)
	if hs := h.take(settings); hs != nil {
		t.Fatal("a check got a head start")
	}
}

// A run whose context ends while the version is unsettled gets the context's error,
// and sends nothing with a side effect; once settled, an ended context does not
// change which client is spoken.
func TestRecordedEngineContext(t *testing.T) {
	a := newAPIEngine(t, "1.41")
	hold := make(chan struct{})
	a.mu.Lock()
	a.hold = hold
	a.mu.Unlock()
	dir := t.TempDir()
	writeRecord(filepath.Join(dir, apiVersionFile), a.host, "1.41")
	hs := headRun(t, a.host, dir)
	e := hs.pick()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.ContainerCreate(ctx, &dockercontainer.Config{Image: "busybox"}, nil, nil, nil, "c"); !errors.Is(err, context.Canceled) {
		t.Errorf("create with an ended context while unsettled: %v", err)
	}
	close(hold)
	<-hs.rec.settled
	if e, err := hs.rec.settledEngine(ctx); err != nil || e != hs.rec.spec {
		t.Errorf("settled engine with an ended context: %v, %v", e, err)
	}
	e.Close()
	for _, r := range a.requests() {
		if strings.HasPrefix(r, "POST ") {
			t.Errorf("request %q", r)
		}
	}
}

// A run on an engine that takes the connection but never answers (its ping held) ends
// when its context ends: the head start's requests, which are not the run's own, end
// with it (bind), so nothing the run waits for as it returns (the image's inspect
// asked ahead, the client's Close, which waits for the ping) waits for ever. With a
// recorded version and without one.
func TestHeadStartEndsWithTheRun(t *testing.T) {
	for _, recorded := range []string{"", "1.41"} {
		t.Run("recorded="+recorded, func(t *testing.T) {
			a := newAPIEngine(t, "1.41")
			hold := make(chan struct{})
			t.Cleanup(func() { close(hold) })
			a.mu.Lock()
			a.hold = hold
			a.mu.Unlock()
			dir := t.TempDir()
			if recorded != "" {
				writeRecord(filepath.Join(dir, apiVersionFile), a.host, recorded)
			}
			hs := headRun(t, a.host, dir)
			ctx, cancel := context.WithCancel(t.Context())
			release := hs.bind(ctx)
			e := hs.pick()
			cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = hs.image.get()
				_, _ = hs.keptInspect("devsandbox-proj-1").get()
				e.Close()
				release()
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run's end waits for the head start's requests to an engine that does not answer")
			}
		})
	}
}

// A run with anchors takes the engine's API version from the head start's
// negotiation: below SubpathAPI the engine's own, from it on at least SubpathAPI (this
// client's newest is newer), so it tells the anchors' form as the engine's version
// does; with no head start there is none.
func TestHeadStartNegotiated(t *testing.T) {
	if apiBefore(api.DefaultVersion, SubpathAPI) {
		t.Fatalf("this client speaks API %s at most, older than %s: a negotiated version cannot tell an engine that mounts sub-paths", api.DefaultVersion, SubpathAPI)
	}
	for _, v := range []string{"1.41", "1.44", "1.45"} {
		a := newAPIEngine(t, v)
		hs := headRun(t, a.host, t.TempDir())
		got, ok := hs.negotiated()
		hs.close()
		if got != v || !ok {
			t.Errorf("engine of API %s: negotiated %q, %v", v, got, ok)
		}
	}
	if _, ok := (*headStart)(nil).negotiated(); ok {
		t.Error("no head start gave a version")
	}
}
