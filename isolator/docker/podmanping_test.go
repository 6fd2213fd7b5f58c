package docker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
)

// Podman's service names itself in every answer's headers; Docker's never does. The
// headers are the ones the engines here answered HEAD /_ping with (podman 4.3.1's
// `system service`, dockerd 20.10).
func TestPodmanHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    map[string]string
		want string
	}{
		{"podman 4.3.1", map[string]string{"Api-Version": "1.41", "Docker-Experimental": "true", "Libpod-Api-Version": "4.3.1",
			"Libpod-Buildah-Version": "1.28.2", "Server": "Libpod/4.3.1 (linux)"}, "4.3.1"},
		{"podman's Libpod-Api-Version alone (a front that rewrites Server)", map[string]string{"Api-Version": "1.41", "Libpod-Api-Version": "4.3.1", "Server": "nginx"}, "4.3.1"},
		{"podman's Server header alone", map[string]string{"Server": "Libpod/5.2.0 (linux)"}, "5.2.0"},
		{"a Server header of Libpod without its version", map[string]string{"Server": "Libpod/"}, "?"},
		{"docker 20.10", map[string]string{"Api-Version": "1.41", "Docker-Experimental": "false", "Ostype": "linux", "Server": "Docker/20.10.24+dfsg1 (linux)"}, ""},
		{"no header", nil, ""},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := podmanHeaders(h); got != tc.want {
			t.Errorf("%s: podmanHeaders = %q, want %q", tc.name, got, tc.want)
		}
	}
	p := pingHeaders(http.Header{"Api-Version": {"1.41"}, "Ostype": {"linux"}, "Docker-Experimental": {"true"}, "Builder-Version": {"2"}})
	if p.APIVersion != "1.41" || p.OSType != "linux" || !p.Experimental || p.BuilderVersion != "2" {
		t.Errorf("pingHeaders: %+v", p)
	}
}

// The engine's verdict is its answer to the ping: Docker's (200 and Api-Version)
// negotiates the client's version; Podman's headers, another status, no Api-Version,
// no answer, or none in time are refused, naming the address, as unavailable.
func TestPingVerdict(t *testing.T) {
	docker := map[string]string{"Api-Version": "1.41", "Ostype": "linux", "Server": "Docker/20.10.24+dfsg1 (linux)"}
	podman := map[string]string{"Api-Version": "1.41", "Libpod-Api-Version": "4.3.1", "Server": "Libpod/4.3.1 (linux)"}
	for _, tc := range []struct {
		name   string
		status int
		h      map[string]string
		want   string // "": a Docker engine
	}{
		{"docker", http.StatusOK, docker, ""},
		{"podman", http.StatusOK, podman, "is Podman 4.3.1's Docker-compatible API, which the docker isolator does not support"},
		{"404", http.StatusNotFound, nil, "answered its ping (HEAD /_ping) with HTTP 404 and no Api-Version header, which no Docker engine does"},
		{"200 without Api-Version", http.StatusOK, nil, "answered its ping (HEAD /_ping) with HTTP 200 and no Api-Version header"},
		{"500 with Api-Version", http.StatusInternalServerError, docker, "answered its ping (HEAD /_ping) with HTTP 500, which no Docker engine does"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.h {
				w.Header().Set(k, v)
			}
			w.WriteHeader(tc.status)
		}))
		a := Address{Host: "tcp://" + srv.Listener.Addr().String(), Origin: "test"}
		c, err := dialVersion(a, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = pingVerdict(context.Background(), context.Background(), c, a)
		switch r, ok := refused(err); {
		case tc.want == "" && err != nil:
			t.Errorf("%s: verdict %v, want a Docker engine", tc.name, err)
		case tc.want == "" && c.ClientVersion() != "1.41":
			t.Errorf("%s: the client speaks %s, want the ping's 1.41", tc.name, c.ClientVersion())
		case tc.want != "" && (!ok || !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(r.st.Reason, "the engine at "+a.Host+" ") || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: verdict %v; want a refusal naming %s and %q", tc.name, err, a.Host, tc.want)
		}
		c.Close()
		srv.Close()
	}
	// No answer: nobody listens; a listener that never answers, within the time.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := Address{Host: "tcp://" + l.Addr().String(), Origin: "test"}
	defer l.Close()
	gone, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := Address{Host: "tcp://" + gone.Addr().String(), Origin: "test"}
	gone.Close()
	for name, tc := range map[string]struct {
		a    Address
		want string
	}{
		"nobody listens":    {dead, "does not answer: its ping (HEAD /_ping): connect: connection refused; install and start Docker"},
		"no answer in time": {silent, "does not answer: its ping (HEAD /_ping) got no answer within 30s"},
	} {
		c, err := dialVersion(tc.a, "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = pingVerdict(ctx, context.Background(), c, tc.a)
		cancel()
		c.Close()
		if r, ok := refused(err); !ok || !r.down || !strings.Contains(err.Error(), "the docker engine at "+tc.a.Host+" (test) "+tc.want) {
			t.Errorf("%s: verdict %v; want the engine refused as not answering (%q)", name, err, tc.want)
		}
	}
}

// Every request of a connection whose engine is refused returns the refusal, and
// nothing but the ping reaches the engine: a command can forget no check.
func TestRefusedConnectionSendsOnlyThePing(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Libpod-Api-Version", "4.3.1")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx := context.Background()
	a := Address{Host: "tcp://" + srv.Listener.Addr().String(), Origin: "test"}
	if _, _, err := Dial(ctx, a); err == nil {
		t.Fatal("Dial: podman's answer was not refused")
	}
	c, _, err := connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := c.speaking("1.41")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for _, e := range []Engine{c, sc} {
		errs := []error{}
		_, err := e.ContainerList(ctx, dockercontainer.ListOptions{})
		errs = append(errs, err)
		_, err = e.VolumeCreate(ctx, volume.CreateOptions{Name: "x"})
		errs = append(errs, err)
		errs = append(errs, e.ContainerRemove(ctx, "x", dockercontainer.RemoveOptions{}))
		_, err = e.ImageInspect(ctx, "x")
		errs = append(errs, err)
		_, werr := e.ContainerWait(ctx, "x", dockercontainer.WaitConditionNotRunning)
		errs = append(errs, <-werr)
		for i, err := range errs {
			if _, ok := refused(err); !ok {
				t.Errorf("request %d on podman's API: %v, want the refusal", i, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"HEAD /_ping", "HEAD /_ping"}; !slices.Equal(got, want) {
		t.Errorf("the engine was sent %q, want only the pings of Dial and connect %q", got, want)
	}
}
