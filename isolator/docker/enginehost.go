package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/addrclass"
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

// hostAddressesFailed is why the engine host's addresses are unknown.
func hostAddressesFailed(err error) error {
	return companionFailed("listing the engine host's addresses (which no host-name allow entry opens, and the proxy refuses as that host's own) "+
		"in a container of its host network: %v; devsandbox cannot keep the sandbox from addresses it does not know: "+
		"use an engine that runs containers with --network host (one with userns-remap does not), or --egress=none", err)
}

// allowlistNames reports whether r, in allowlist mode, allows a host name resolved at
// launch: the names whose addresses the engine host's are checked against.
func allowlistNames(r egress.Rules) bool {
	if !r.NeedsFirewall() {
		return false
	}
	for _, res := range r.Resolved {
		if allowedName(r, res.Host) {
			return true
		}
	}
	return false
}

func allowedName(r egress.Rules, host string) bool {
	return slices.ContainsFunc(r.Allow, func(e egress.Entry) bool { return !e.IsAddress() && !e.Wildcard && e.Host == host })
}

// allowlistOpensEngineHost fails when an allowed name of r resolved at launch to one of
// the engine host's addresses (engineHost), or a form embedding one: the firewall
// would let the sandbox reach that host's services, by the name's DNS's choice. The
// planner checks the same against this machine's addresses, which are not a remote
// engine's host's. Pure.
func allowlistOpensEngineHost(r egress.Rules, engineHost []string) error {
	host := map[netip.Addr]bool{}
	for _, s := range engineHost {
		if a, err := netip.ParseAddr(s); err == nil {
			host[a.Unmap()] = true
		}
	}
	isLocal := func(a netip.Addr) bool { return host[a] }
	for _, res := range r.Resolved {
		if !allowedName(r, res.Host) {
			continue
		}
		for _, a := range res.Addrs {
			if class, what := addrclass.ClassifyAt(a, isLocal); class == addrclass.ClassThisHost {
				return fmt.Errorf("%w: egress allowlist: %s resolves to %s, %s the docker engine runs on, which only an IP or CIDR entry opens "+
					"(a name's addresses are its DNS's choice); add the address as an entry if you mean to reach it",
					isolator.ErrConfig, res.Host, a.Unmap(), strings.Replace(what, "this host", "the host", 1))
			}
		}
	}
	return nil
}
