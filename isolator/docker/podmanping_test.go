package docker

import (
	"net/http"
	"testing"
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
