package docker

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/devsandbox/devsandbox/isolator"
)

// The docker isolator refuses Podman's Docker-compatible API (rootless.go). Podman's
// service on this machine is told before any request by who listens on its socket
// (refusePodman); behind a relay, or at a tcp:// address, it is told by what it says
// of itself: every answer of Podman's service, its /_ping among them, carries a
// Libpod-Api-Version header and "Server: Libpod/VERSION" (Podman 4.3.1 here), which
// Docker's never do. A run's client negotiates its API version with a ping; the run
// sends that ping itself (negotiatePing), reading those headers as well, so telling
// Podman costs no request of its own. The run waits for the answer only where it is
// about to change something on the engine (refusePodmanSaid): the requests asked for
// ahead are reads, and the one creation asked for ahead waits for it too.

// engineSays is the engine's answer to the run's negotiating ping.
type engineSays struct {
	ping types.Ping
	// podman is the Podman release whose Docker-compatible API answered, "" for
	// Docker (or an engine that names neither).
	podman string
}

// podmanHeaders returns the Podman release the headers of an engine's answer name, or
// "". Pure.
func podmanHeaders(h http.Header) string {
	if v := h.Get("Libpod-Api-Version"); v != "" {
		return v
	}
	if s, ok := strings.CutPrefix(h.Get("Server"), "Libpod/"); ok {
		v, _, _ := strings.Cut(s, " ")
		if v == "" {
			v = "?"
		}
		return v
	}
	return ""
}

// negotiatePing sends c's negotiating ping (HEAD /_ping, unversioned) through c's own
// connection (its pinned socket, its TLS), negotiates c's API version with the answer
// as c would with its own ping, and returns the answer with the Podman release its
// headers name. The request is the one c's negotiation sends, to the same address, so
// its connection is the one c's next request reuses. tls is whether c speaks TLS (the
// address has TLS material). When that ping fails, or is refused, c's own ping is
// sent (it says why with the client's error classes, and falls back to GET): an
// answer to that one has no headers to read, and counts as Docker's (both Docker and
// Podman answer HEAD /_ping).
func negotiatePing(ctx context.Context, c *client.Client, tls bool) (engineSays, error) {
	u, err := client.ParseHostURL(c.DaemonHost())
	if err != nil {
		return engineSays{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, path.Join(u.Path, "/_ping"), nil)
	if err != nil {
		return engineSays{}, err
	}
	req.URL.Scheme, req.URL.Host = "http", u.Host
	if tls {
		req.URL.Scheme = "https"
	}
	if u.Scheme == "unix" || u.Scheme == "npipe" {
		req.Host = client.DummyHost
	}
	resp, err := c.HTTPClient().Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError {
		if ctx.Err() != nil {
			return engineSays{}, ctx.Err()
		}
		p, err := c.Ping(ctx)
		if err != nil {
			return engineSays{}, err
		}
		c.NegotiateAPIVersionPing(p)
		return engineSays{ping: p}, nil
	}
	says := engineSays{ping: pingHeaders(resp.Header), podman: podmanHeaders(resp.Header)}
	c.NegotiateAPIVersionPing(says.ping)
	return says, nil
}

// pingHeaders reads a ping's answer as the Docker client does. Pure.
func pingHeaders(h http.Header) types.Ping {
	p := types.Ping{APIVersion: h.Get("Api-Version"), OSType: h.Get("Ostype"), Experimental: h.Get("Docker-Experimental") == "true"}
	if bv := h.Get("Builder-Version"); bv != "" {
		p.BuilderVersion = build.BuilderVersion(bv)
	}
	return p
}

// negotiate starts e's negotiating ping (negotiatePing) when e is a Docker client (Dial's),
// else returns nil: another Engine (a test's) negotiates nothing.
func negotiate(ctx context.Context, e Engine, addr Address) *future[engineSays] {
	c, ok := clientOf(e)
	if !ok {
		return nil
	}
	return fetch(func() (engineSays, error) { return negotiatePing(ctx, c, addr.TLS != "") })
}

// podmanSaid returns the refusal of a run whose engine said, at its ping, that it is
// Podman's Docker-compatible API; nil when it did not, or there was no ping (a failed
// one: the run's next request says why the engine does not answer).
func podmanSaid(says *future[engineSays], addr Address) error {
	if says == nil {
		return nil
	}
	s, err := says.get()
	if err != nil || s.podman == "" {
		return nil
	}
	return errPodman(podmanRefused(addr.Host, s.podman))
}

// errPodman is the run's error for st, a refusal of Podman's API.
func errPodman(st isolator.Status) error {
	return fmt.Errorf("%w: %s; the command did not run. To fix: %s", isolator.ErrUnavailable, st.Reason, st.Fix)
}
