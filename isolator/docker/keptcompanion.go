package docker

import (
	"context"
	"errors"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/proxy/companion"
)

// A kept container has one companion container of its own, devsandbox-<name>-px: made
// with the container's first session that needs a proxy, found again by name (and its
// spec label) by the next ones, removed with the kept container (`sandboxes rm`,
// `sandboxes prune`: it carries the project's labels). It holds nothing of a session:
// its main process only waits (`devsandbox-proxy companion hold`). Each session execs
// `devsandbox-proxy companion` in it, with the session's request on the exec's stdin,
// exactly as a one-shot companion container gets it: so the session's policy, MITM CA
// and credentials reach it with every session, never in its config, argv, environment
// or labels, and a changed policy needs no new container. The exec's stdout is the
// session's audit stream; its stdin is the session's lifeline (the engine closes it when
// the attach connection drops, also when devsandbox is killed). The companion is
// recreated when it is gone or its own spec (image, user, devsandbox's version) changed.
//
// Published ports are not the kept companion's: the engine reserves a published port
// on its host for as long as the container lives, and a kept container outlives its
// sessions. A session with published ports has, besides its exec, a companion
// container of its own that relays only those, removed with the session.

// errCompanionBusy: the kept companion must be recreated but a session is using it.
var errCompanionBusy = errors.New("the kept companion is in use with another spec")

// keptCompanionName is the name of the kept container's companion.
func keptCompanionName(p *isolator.Plan) string { return "devsandbox-" + p.Project.Name + "-px" }

// keptCompanionConfig renders the kept container's companion: companionConfig without
// published ports and without the session's label, kept, its main process waiting,
// stdin closed, labelled with the hash of its spec. Pure.
func keptCompanionConfig(p *isolator.Plan, image string, imageEnv []string, volume string, labels map[string]string) (*dockercontainer.Config, *dockercontainer.HostConfig) {
	cfg, hc := companionConfig(p, image, imageEnv, volume, labels, false)
	cfg.Labels[LabelSession] = "" // not an image's either (ownLabels)
	cfg.Labels[LabelKept] = "true"
	cfg.Cmd = []string{companion.Arg, companion.HoldArg}
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = false, false, false
	cfg.OpenStdin, cfg.StdinOnce = false, false
	hc.AutoRemove = false
	cfg.Labels[LabelSpec] = specHash(cfg, hc)
	return cfg, hc
}

// keptSession starts the session's egress services for a kept container: its process
// in the kept companion (the proxy), and, with published ports, a companion container
// of its own for those (start). When the kept companion must be recreated while
// another session uses it, the session gets a companion container of its own for
// everything, as a one-shot run does.
func (b *Isolator) keptSession(ctx context.Context, e Engine, p *isolator.Plan, pr programs, spec *Spec, req companion.Request, pc *pendingCompanion, start func(companion.Request) error) error {
	ports := req.Publish
	req.Publish = nil
	c, err := b.execCompanion(ctx, e, p, pr, spec, req)
	switch {
	case errors.Is(err, errCompanionBusy):
		req.Publish = ports
		return start(req)
	case err != nil:
		return err
	}
	pc.cs = append(pc.cs, c)
	if len(ports) == 0 {
		return nil
	}
	return start(companion.Request{Session: req.Session, Dir: req.Dir, Publish: ports})
}

// execCompanion runs the session's proxy in the kept companion, making or starting
// the companion first. The project's companion lock serialises that with other
// sessions until the exec is started (so a session that finds the companion to
// recreate sees every other session's exec).
func (b *Isolator) execCompanion(ctx context.Context, e Engine, p *isolator.Plan, pr programs, spec *Spec, req companion.Request) (*sessionCompanion, error) {
	unlock, err := lockFile(filepath.Join(p.StateDir, "docker-companion.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	cfg, hc := keptCompanionConfig(p, spec.Config.Image, spec.ImageEnv, endpointVolume(p, true), spec.Config.Labels)
	id, err := b.keptCompanion(ctx, e, p, cfg, hc, true)
	if err != nil {
		return nil, err
	}
	execOpts := dockercontainer.ExecOptions{
		User: cfg.User, WorkingDir: "/", AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: []string{proxyGOMAXPROCS},
		Cmd: []string{ShipDir + "/" + proxyName, companion.Arg},
	}
	ex, err := e.ContainerExecCreate(ctx, id, execOpts)
	if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		// The companion seen before the lock was taken was removed or stopped
		// since: look again, under the lock.
		if id, err = b.keptCompanion(ctx, e, p, cfg, hc, false); err != nil {
			return nil, err
		}
		ex, err = e.ContainerExecCreate(ctx, id, execOpts)
	}
	if err != nil {
		return nil, companionFailed("creating the session's process in the companion %s: %v", keptCompanionName(p), err)
	}
	c := &sessionCompanion{e: e, id: id, exec: true, ready: make(chan error, 1), relayed: make(chan error, 1)}
	if c.hj, err = e.ContainerExecAttach(ctx, ex.ID, dockercontainer.ExecAttachOptions{}); err != nil {
		return nil, companionFailed("starting the session's process in the companion %s: %v", keptCompanionName(p), err)
	}
	if err := c.begin(req, p, spec.engineHostAhead); err != nil {
		c.hj.Close()
		return nil, err
	}
	return c, nil
}

// proxyGOMAXPROCS is the session's proxy's environment in the kept companion:
// devsandbox-proxy runs its Go code on one P (its maxProcs), and started with this
// its runtime has one from the start, on the way to its ready line, which the
// session's command waits for: a thread fewer, no second P's caches, and no
// stop-the-world to drop to one. The proxy starts no process that could inherit it.
const proxyGOMAXPROCS = "GOMAXPROCS=1"

// keptCompanion returns the id of the kept companion, running, for cfg: the one there
// when its spec label is cfg's, else a new one (the old one removed, unless a session's
// process runs in it: errCompanionBusy). With early, the first inspect may be one
// asked for before the caller took the companion lock (see ahead.go): it is used only
// when it shows the companion running with cfg's spec (an exec into it fails if it
// went since, and the caller looks again); what would start, make or remove a
// companion is decided on an inspect made under the lock.
func (b *Isolator) keptCompanion(ctx context.Context, e Engine, p *isolator.Plan, cfg *dockercontainer.Config, hc *dockercontainer.HostConfig, early bool) (string, error) {
	name := keptCompanionName(p)
	in, err := e.ContainerInspect(ctx, name)
	if early && (err != nil || !runningWith(in, cfg.Labels[LabelSpec])) {
		in, err = e.ContainerInspect(ctx, name)
	}
	switch {
	case cerrdefs.IsNotFound(err):
		return b.createKeptCompanion(ctx, e, name, cfg, hc)
	case err != nil:
		return "", companionFailed("inspecting the companion %s: %v", name, err)
	case in.Config != nil && in.Config.Labels[LabelSpec] == cfg.Labels[LabelSpec]:
		if in.State == nil || !in.State.Running {
			if err := e.ContainerStart(ctx, in.ID, dockercontainer.StartOptions{}); err != nil {
				return "", companionFailed("starting the companion %s: %v", name, err)
			}
		}
		return in.ID, nil
	}
	if in.State != nil && in.State.Running {
		for _, x := range in.ExecIDs {
			if xi, err := e.ContainerExecInspect(ctx, x); err == nil && xi.Running {
				return "", errCompanionBusy
			}
		}
	}
	if err := e.ContainerRemove(ctx, in.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return "", companionFailed("removing the outdated companion %s: %v", name, err)
	}
	return b.createKeptCompanion(ctx, e, name, cfg, hc)
}

// createKeptCompanion creates the kept companion (devsandbox-proxy is in the derived
// image) and starts it.
func (b *Isolator) createKeptCompanion(ctx context.Context, e Engine, name string, cfg *dockercontainer.Config, hc *dockercontainer.HostConfig) (string, error) {
	created, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		return "", companionFailed("the engine refused the companion container %s: %v", name, err)
	}
	if err := e.ContainerStart(ctx, created.ID, dockercontainer.StartOptions{}); err != nil {
		remove(ctx, e, created.ID)
		return "", companionFailed("starting the companion %s: %v", name, err)
	}
	return created.ID, nil
}
