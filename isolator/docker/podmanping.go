package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/devsandbox/devsandbox/isolator"
)

// The docker isolator speaks to Docker engines only (rootless.go refuses Podman's
// Docker-compatible API). connect asks every engine its ping (HEAD /_ping,
// unversioned) before anything else, through the connection's own client (its
// pinned socket, its TLS), and the answer is the engine's verdict (pingVerdict):
//   - Podman's service on this machine is told before the ping by who listens on its
//     socket (connect); behind a relay, or at a tcp:// address, by what it says of
//     itself: every answer of Podman's service, its /_ping among them, carries a
//     Libpod-Api-Version header and "Server: Libpod/VERSION" (Podman 4.3.1 here),
//     which Docker's never do;
//   - a Docker engine answers 200 with an Api-Version header (every engine of API
//     1.40 and newer answers HEAD; MinAPI is 1.41). Any other answer is a listener
//     that is not a Docker engine, or a relay that does not pass the ping on:
//     refused. One exception is asked again, as GET /_ping: a 400 with no
//     Api-Version over plain TCP, a TLS engine's answer to plain HTTP, whose body
//     says so (tlsCause words it);
//   - no answer (a connection refused or closed, nothing within pingTimeout): the
//     engine does not answer, refused with the fix for that.
//
// The client negotiates its API version with that answer, so telling the engine
// costs no request of its own. Every request of the connection waits for the verdict
// (engineConn.ready), so no command sends anything but the ping to an engine it
// refuses.

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

// pingVerdict sends c's negotiating ping (HEAD /_ping, unversioned) through c's own
// connection, within ctx (parent: the caller's, whose end is not the engine's
// fault), and returns the answer with the Podman release its headers name, and the
// engine's refusal when it is not a Docker engine's answer (see above). On a Docker
// engine's answer c's API version is negotiated from it, as c would with its own
// ping, and the connection c's next request reuses is the ping's.
func pingVerdict(ctx, parent context.Context, c *client.Client, a Address) (engineSays, error) {
	resp, body, err := ping(ctx, c, a, http.MethodHead)
	if err == nil && resp.StatusCode == http.StatusBadRequest && a.TLS == "" && resp.Header.Get("Api-Version") == "" {
		// A TLS engine reached over plain TCP answers 400 before reading any request,
		// and says why in the body, which a HEAD answer has none of: the same ping as
		// GET reads it (the Docker client's own ping falls back to GET too).
		resp, body, err = ping(ctx, c, a, http.MethodGet)
	}
	if err != nil {
		if parent.Err() != nil {
			return engineSays{}, parent.Err()
		}
		return engineSays{}, &refusal{st: engineDown(a, pingFailed(err)), down: true}
	}
	says := engineSays{ping: pingHeaders(resp.Header), podman: podmanHeaders(resp.Header)}
	if says.podman != "" {
		return says, &refusal{st: podmanRefused(a.Host, says.podman)}
	}
	if resp.StatusCode != http.StatusOK || says.ping.APIVersion == "" {
		if reason, fix, ok := tlsCause(a, errors.New(body)); ok {
			return says, &refusal{st: isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}, down: true}
		}
		return says, &refusal{st: notDocker(a.Host, resp.StatusCode, says.ping.APIVersion)}
	}
	c.NegotiateAPIVersionPing(says.ping)
	return says, nil
}

// ping sends c's ping (/_ping, unversioned) with method through c's own connection
// and returns the answer and the start of its body (a GET's).
func ping(ctx context.Context, c *client.Client, a Address, method string) (*http.Response, string, error) {
	u, err := client.ParseHostURL(c.DaemonHost())
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, path.Join(u.Path, "/_ping"), nil)
	if err != nil {
		return nil, "", err
	}
	req.URL.Scheme, req.URL.Host = "http", u.Host
	if a.TLS != "" {
		req.URL.Scheme = "https"
	}
	if u.Scheme == "unix" || u.Scheme == "npipe" {
		req.Host = client.DummyHost
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp, string(b), nil
}

// pingFailed is the failure of a ping that got no answer, without the request's URL
// (the pinned socket's /proc path, nobody's to act on): the connection's failure,
// or that no answer came within pingTimeout.
func pingFailed(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("its ping (HEAD /_ping) got no answer within %s", pingTimeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		err = oe.Err
	}
	return fmt.Errorf("its ping (HEAD /_ping): %w", err)
}

// notDocker is the refusal of an engine at host whose ping answered status with API
// version api ("": no Api-Version header). Pure.
func notDocker(host string, status int, api string) isolator.Status {
	what := fmt.Sprintf("HTTP %d", status)
	if api == "" {
		what += " and no Api-Version header"
	}
	return isolator.Status{State: isolator.Unavailable,
		Reason: fmt.Sprintf("the engine at %s answered its ping (HEAD /_ping) with %s, which no Docker engine does: it is not a Docker engine, or a relay in front of one that does not pass the ping on", host, what),
		Fix:    "point DOCKER_HOST (docker.host) at a Docker engine (unset, the default socket unix:///var/run/docker.sock), or run with --isolator bwrap or --isolator krun"}
}

// refusal is an engine's verdict against it (pingVerdict, connect): every request of
// the connection returns it. It is an isolator.ErrUnavailable; engineDown gives
// back its status, so that callers that word a failed request word it as it is.
type refusal struct {
	st isolator.Status
	// down: the engine did not answer (worded as engineDown words it), rather
	// than answered as something the docker isolator does not speak to.
	down bool
}

func (r *refusal) Error() string {
	if r.down {
		return fmt.Sprintf("%v: %s; %s", isolator.ErrUnavailable, r.st.Reason, r.st.Fix)
	}
	return fmt.Sprintf("%v: %s; the command did not run. To fix: %s", isolator.ErrUnavailable, r.st.Reason, r.st.Fix)
}

func (r *refusal) Unwrap() error { return isolator.ErrUnavailable }

// refused is err's refusal, when it is one.
func refused(err error) (*refusal, bool) {
	var r *refusal
	return r, errors.As(err, &r)
}

// pingHeaders reads a ping's answer as the Docker client does. Pure.
func pingHeaders(h http.Header) types.Ping {
	p := types.Ping{APIVersion: h.Get("Api-Version"), OSType: h.Get("Ostype"), Experimental: h.Get("Docker-Experimental") == "true"}
	if bv := h.Get("Builder-Version"); bv != "" {
		p.BuilderVersion = build.BuilderVersion(bv)
	}
	return p
}

// engineVerdict returns the engine's refusal once its ping answered (nil for a Docker
// engine, or no ping: a test's Engine), for a run to stop at before its first
// request with a side effect; its requests would each be refused anyway.
func engineVerdict(says *future[engineSays]) error {
	if says == nil {
		return nil
	}
	if _, err := says.get(); err != nil {
		if _, ok := refused(err); ok {
			return err
		}
	}
	return nil
}

// errPodman is the run's error for st, a refusal of Podman's API.
func errPodman(st isolator.Status) error { return &refusal{st: st} }
