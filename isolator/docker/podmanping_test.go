package docker

import (
	"errors"
	"net/http"
	"strings"
	"testing"

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

// A run whose engine's ping named Podman is refused, as unavailable, naming the
// address and the release; Docker's ping, a failed one or none refuses nothing.
func TestPodmanSaid(t *testing.T) {
	addr := Address{Host: "tcp://127.0.0.1:47311"}
	says := func(s engineSays, err error) *future[engineSays] {
		return fetch(func() (engineSays, error) { return s, err })
	}
	err := podmanSaid(says(engineSays{podman: "4.3.1"}, nil), addr)
	want := "isolator unavailable: the engine at tcp://127.0.0.1:47311 is Podman 4.3.1's Docker-compatible API"
	if !errors.Is(err, isolator.ErrUnavailable) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("podman's ping: podmanSaid = %v; want the run refused as unavailable (%q…)", err, want)
	}
	for name, s := range map[string]*future[engineSays]{
		"docker's ping": says(engineSays{}, nil),
		"a failed ping": says(engineSays{podman: "4.3.1"}, errors.New("no answer")),
		"no ping":       nil,
	} {
		if err := podmanSaid(s, addr); err != nil {
			t.Errorf("%s: podmanSaid = %v; want nil", name, err)
		}
	}
}
