package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/proxy/companion"
)

// hostAddressesConfig renders the container that lists a remote engine's host's
// interface addresses: devsandbox-proxy (in the derived image) printing them
// (companion.HostAddressesArg), in the host's network namespace, as the sandbox's
// user, with no capability, no mount and none of the image's environment. It runs
// devsandbox's program only, and nothing it prints is trusted beyond addresses to
// refuse. Pure.
func hostAddressesConfig(p *isolator.Plan, image string, imageEnv []string, labels map[string]string) (*dockercontainer.Config, *dockercontainer.HostConfig) {
	l := map[string]string{LabelRole: roleCompanion, LabelKept: "false", LabelSession: p.Proxy.Session}
	for _, k := range []string{LabelProject, LabelName, LabelDir, LabelVersion, LabelUser} {
		if v, ok := labels[k]; ok {
			l[k] = v
		}
	}
	pids := int64(16)
	uid, gid := p.User.InContainer()
	cfg := &dockercontainer.Config{
		User:         fmt.Sprintf("%d:%d", uid, gid),
		Image:        image,
		Entrypoint:   []string{container.ShipDir + "/" + proxyName},
		Cmd:          []string{companion.HostAddressesArg},
		WorkingDir:   "/",
		Env:          unsetImageEnv(imageEnv, nil),
		Healthcheck:  noHealthcheck(),
		Labels:       ownLabels(l),
		AttachStdout: true,
		AttachStderr: true,
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode:    "host",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Resources:      dockercontainer.Resources{PidsLimit: &pids},
	}
	return cfg, hc
}

// engineHostAddresses returns the addresses of a remote engine's host that its
// companion refuses as that host's own: every interface address of the host, read by a
// container in its network namespace (the companion, on a bridge, sees only its own
// and its gateway), and the addresses the engine's tcp:// address names (its API, which
// may be a NAT's public address the host has no interface for). It fails when it
// cannot read them: a proxy that knew none would let a name entry, or the default
// allow, reach the engine host's services and its API.
func engineHostAddresses(ctx context.Context, e Engine, addr Address, p *isolator.Plan, image string, imageEnv []string, labels map[string]string) ([]string, error) {
	cfg, hc := hostAddressesConfig(p, image, imageEnv, labels)
	created, err := createNamed(ctx, e, cfg, hc, nil, "devsandbox-"+p.Project.Name+"-ha-"+container.RandomSuffix())
	if err != nil {
		return nil, hostAddressesFailed(err)
	}
	defer remove(ctx, e, created.ID)
	hj, err := e.ContainerAttach(ctx, created.ID, dockercontainer.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, hostAddressesFailed(err)
	}
	defer hj.Close()
	exited, waitErr := e.ContainerWait(context.WithoutCancel(ctx), created.ID, dockercontainer.WaitConditionNextExit)
	if err := e.ContainerStart(ctx, created.ID, dockercontainer.StartOptions{}); err != nil {
		return nil, hostAddressesFailed(err)
	}
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, hj.Reader); err != nil {
		return nil, hostAddressesFailed(err)
	}
	select {
	case w := <-exited:
		if w.StatusCode != 0 {
			return nil, hostAddressesFailed(fmt.Errorf("the lister exited %d: %s", w.StatusCode, strings.TrimSpace(errb.String())))
		}
	case err := <-waitErr:
		return nil, hostAddressesFailed(err)
	case <-ctx.Done():
		return nil, hostAddressesFailed(ctx.Err())
	}
	var refuse []string
	for _, line := range strings.Fields(out.String()) {
		a, err := netip.ParseAddr(line)
		if err != nil {
			return nil, hostAddressesFailed(fmt.Errorf("the lister printed %q, not an address", line))
		}
		refuse = append(refuse, a.Unmap().String())
	}
	if len(refuse) == 0 {
		return nil, hostAddressesFailed(fmt.Errorf("the lister printed no address"))
	}
	api, err := apiAddresses(ctx, addr.Host)
	if err != nil {
		return nil, hostAddressesFailed(err)
	}
	return append(refuse, api...), nil
}

// apiAddresses returns the addresses a tcp:// engine address names, but loopback ones
// (a tunnel's end on this machine, which the companion's loopback is not); none for
// another scheme.
func apiAddresses(ctx context.Context, host string) ([]string, error) {
	u, perr := url.Parse(host)
	if perr != nil || u.Scheme != "tcp" || u.Hostname() == "" {
		return nil, nil // not a tcp:// address: no API address to add
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("resolving the engine's address %s: %w", u.Hostname(), err)
	}
	var out []string
	for _, a := range addrs {
		if a = a.Unmap(); !a.IsLoopback() {
			out = append(out, a.String())
		}
	}
	return out, nil
}

// hostAddressesFailed is why the companion cannot know the engine host's addresses.
func hostAddressesFailed(err error) error {
	return companionFailed("listing the engine host's addresses, which the egress proxy refuses as that host's own, "+
		"in a container of its host network: %v; the proxy cannot refuse what it does not know, so the session does not start: "+
		"use an engine that runs containers with --network host (one with userns-remap does not), or --egress=none", err)
}
