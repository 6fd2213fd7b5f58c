package docker

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// apiEngine is an engine on a Unix socket that speaks apiVersion: it answers the
// ping, docker.image's inspect and (404) the kept container's, refuses other versions
// as an engine does, and records the requests.
type apiEngine struct {
	host    string
	mu      sync.Mutex
	version string
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
	a := &apiEngine{host: "unix://" + sock, version: version}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.reqs = append(a.reqs, r.Method+" "+r.URL.Path)
		v := a.version
		a.mu.Unlock()
		w.Header().Set("Api-Version", v)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/_ping" {
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/v"+v+"/") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"message":"client version is not supported"}`))
			return
		}
		switch p := strings.TrimPrefix(r.URL.Path, "/v"+v); p {
		case "/images/busybox/json":
			_, _ = w.Write([]byte(`{"Id":"sha256:busybox-` + v + `"}`))
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
// engine's API version recorded, in that version beside the ping, and the answers
// are the run's only when the ping confirms the version.
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
	if got := readAPIVersions(versions)[a.host]; got != "1.41" {
		t.Fatalf("recorded %q, want 1.41", got)
	}

	// Recorded: the requests go out in that version at once; the ping confirms it.
	hs = headRun(t, a.host, dir)
	if e = hs.pick(); e != hs.spec {
		t.Fatal("the run does not use the client that spoke the confirmed version")
	}
	if hs.image == nil || hs.keptInspect("devsandbox-proj-1") == nil {
		t.Fatal("the answers asked for in the confirmed version were dropped")
	}
	if in, err := hs.image.get(); err != nil || in.ID != "sha256:busybox-1.41" {
		t.Fatalf("image inspect: %+v, %v", in, err)
	}
	e.Close()
	if got, want := a.requests(), []string{"GET /v1.41/containers/devsandbox-proj-1/json", "GET /v1.41/images/busybox/json", "HEAD /_ping"}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}

	// The engine now speaks another version: the answers asked for in the recorded
	// one are dropped (the run asks again with the negotiating client), and the new
	// version is recorded.
	a.mu.Lock()
	a.version = "1.43"
	a.mu.Unlock()
	hs = headRun(t, a.host, dir)
	if e = hs.pick(); e != hs.engine {
		t.Fatal("the run uses the client of an unconfirmed version")
	}
	if hs.image != nil || hs.keptInspect("devsandbox-proj-1") != nil {
		t.Fatal("answers asked for in an unconfirmed version were kept")
	}
	if _, err := e.ImageInspect(t.Context(), "busybox"); err != nil {
		t.Fatalf("the negotiating client: %v", err)
	}
	e.Close()
	if got := a.requests(); !slices.Contains(got, "GET /v1.43/images/busybox/json") || !slices.Contains(got, "GET /v1.41/images/busybox/json") {
		t.Errorf("requests %q", got)
	}
	if got := readAPIVersions(versions)[a.host]; got != "1.43" {
		t.Errorf("recorded %q, want 1.43", got)
	}
}

// A recorded version that is not one (the record is a file) is not spoken: the client
// negotiates.
func TestHeadStartRecordedVersionForm(t *testing.T) {
	for v, ok := range map[string]bool{"1.41": true, "1.5": true, "10.100": true, "": false, "1": false, "1.41/containers/x/kill?": false, "v1.41": false, "1.": false, ".41": false, "1.41.1": false} {
		if apiVersionForm(v) != ok {
			t.Errorf("apiVersionForm(%q) = %v", v, !ok)
		}
	}
	a := newAPIEngine(t, "1.41")
	dir := t.TempDir()
	writeAPIVersion(filepath.Join(dir, apiVersionFile), a.host, "1.41/containers/x")
	hs := headRun(t, a.host, dir)
	if hs.spec != nil {
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
	if got := readAPIVersions(filepath.Join(dir, apiVersionFile))[a.host]; got != "1.41" {
		t.Errorf("recorded %q, want 1.41", got)
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
