package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// ErrSpecChanged is wrapped when a kept container must be recreated for a changed
// configuration but another session is attached to it.
var ErrSpecChanged = fmt.Errorf("kept container in use with another configuration")

// runKept runs the command in the project's kept container (keep_container): the
// same container while the rendered spec is the same, recreated when it changed and no
// other session is attached. A per-project lock makes concurrent runs safe: it is held
// until this run's exec is running, so a run with another spec sees it attached.
// ahead, when set, is the kept container's inspect asked for as the run started.
// stopServices stops the run's host services (the watch's last check of what the
// sandbox wrote); it is called once the exec's output ended, beside the request for
// its status, as the session's egress services are stopped, and the run returns only
// after both returned.
func (b *Isolator) runKept(ctx context.Context, e Engine, addr Address, p *isolator.Plan, spec *Spec, pr programs, hello *wire.Hello, stdio isolator.Stdio, ahead *future[dockercontainer.InspectResponse], stopServices func()) (int, error) {
	comp := b.goCompanion(ctx, e, addr, p, pr, spec)
	defer comp.stop()
	if err := comp.failed(); err != nil {
		return 0, err
	}
	unlock, err := lockFile(filepath.Join(p.StateDir, "docker.lock"))
	if err != nil {
		return 0, err
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if spec.AgentBind != "" && ahead != nil {
		if in, err := ahead.get(); err == nil && runningFor(in, spec) && !bindsAgent(in, spec.AgentBind) {
			// The running container binds no relays' directory, or another than
			// this session's (made before the socket directory moved): the probe
			// cannot pass, so the stream starts at once, beside the session. The
			// bind is not part of the spec (its hash): the key the user turned on
			// is not in effect until the container is made again, so the run says so.
			why := "without the bind of this host's ssh agent relays (before the key was on)"
			if bindsAnyAgent(in) {
				why = "with the relays of another socket directory"
			}
			b.warn("docker.agent_bind is on, but the kept container %s was made %s: this session's agent goes through the stream instead; remove the container (docker rm -f %s; the sandbox home stays) and the next run makes it with the bind", spec.Name, why, spec.Name)
			dropAgentBind(spec)
		}
	}
	if startFirst(p, hello, spec.AgentBind != "") {
		spec = withStartFirst(spec)
	}
	// The session's id names it to the keeper; its End nonce authenticates its init's
	// report that nothing of it runs any more (keptend.go).
	sessionID := container.RandomSuffix()
	spec = withSessionID(spec, sessionID)
	hello.End = container.NewNonce()
	id, fresh, ex, err := b.keptExec(ctx, e, addr, p, spec, ahead)
	if err != nil {
		return 0, err
	}
	hj, err := e.ContainerExecAttach(ctx, ex.ID, dockercontainer.ExecAttachOptions{})
	if err != nil {
		return 0, fmt.Errorf("%w: starting the exec in %s: %w", isolator.ErrProtection, spec.Name, err)
	}
	defer hj.Close()
	// The session's agent is served by an exec of its own, which ends with it: at
	// once, or when the init asks, the bound socket having failed its proof.
	var ag *agentStream
	var lazy *lazyAgent
	if spec.AgentBind != "" {
		lazy = &lazyAgent{b: b, ctx: ctx, e: e, p: p, id: id, fail: func() { hj.Close() }}
	} else if ag, err = b.startAgentNow(ctx, e, p, id); err != nil {
		return 0, err
	}
	agentStopped := sync.OnceFunc(func() { ag.stop(); lazy.stop() })
	defer agentStopped()
	// Until the session starts, the end of ctx ends the init's stream: the init
	// takes the command down, as it does when this process dies. From then on, the
	// command gets SIGTERM first (stopOnCancel).
	stopNow := context.AfterFunc(ctx, hj.Close)
	defer stopNow()
	// The exec's init waits for the hello: the command may reach the proxy and be
	// reached on its ports as soon as it starts, so the hello waits for the companion
	// (its exec in the kept companion runs beside this one).
	if err := comp.ready(ctx); err != nil {
		return 0, err
	}
	if err := ag.waitReady(ctx); err != nil {
		return 0, err
	}
	if !stopNow() {
		return 0, fmt.Errorf("the sandbox was stopped before the command ran: %w", context.Cause(ctx))
	}
	sess, err := b.attach(hj.Conn, hj.Reader, p, spec.Layout.Masks, stdio, hello, lazy)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	// Not the engine's pause: it would freeze the container's other sessions too.
	// The session's init stops what this session runs, and only that.
	b.Freezer.Set(sess.Freeze(nil, stdio.Err, hj.Close))
	defer b.Freezer.End()
	defer b.stopOnCancel(ctx, sess, hj.Close)()
	b.phase("exec")
	defer goSweep(ctx, e, p, id, b.mark, fresh)()
	select {
	case <-sess.report.Seen():
		lazy.seen(sess.report)
		b.phase("sandbox ready")
	case <-sess.outDone:
	case <-time.After(30 * time.Second):
	}
	unlock()
	locked = false

	never := make(chan struct{})
	sess.wait(never, 0)
	agentStopped()
	// The exec's output ended. The init reported, last, that nothing of the session
	// runs any more; or, without that report, the keeper ends what is left of it
	// and confirms: only then may the watch look at what it wrote for the last time.
	// (An init that reported a failure started no command.)
	var unconfirmed error
	if _, failure := sess.report.Result(); failure == "" && !sess.report.Ended() {
		unconfirmed = b.endSession(ctx, e, id, spec, sessionID)
	}
	// The watch's last check need not wait for the engine's answer below, which the
	// docker CLI asks for too.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stopServices()
	}()
	defer func() { <-stopped }()
	// Nor need the session's proxy (its process in the kept companion) wait for it:
	// everything the session ran is gone, and its end (the end of its stdin, its
	// last audit records relayed) takes the engine a few milliseconds.
	compStopped := make(chan struct{})
	go func() {
		defer close(compStopped)
		comp.stop()
	}()
	defer func() { <-compStopped }()
	// Its status is final shortly after.
	code := 125
	for i := 0; i < 100; i++ {
		in, err := e.ContainerExecInspect(context.WithoutCancel(ctx), ex.ID)
		if err != nil {
			break
		}
		if !in.Running {
			code = in.ExitCode
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.engineLost(ctx, addr, code)
	if unconfirmed != nil {
		<-stopped // its warnings first
		return 0, unconfirmed
	}
	return sess.Result(code)
}

// keptExec creates the run's exec in the kept container for spec (keptContainer),
// under the project's lock, and returns the container's id, whether it was not
// running, and the exec. ahead, when set, is an inspect of the container made before
// the lock was taken. It is used when it shows the container running with this spec,
// or no container: when the exec cannot be made in that container (it was removed or
// stopped meanwhile: the engine knows no such container, or it is not running), or
// the container cannot be made (a concurrent run made one meanwhile: the name is
// taken), the container is looked at again under the lock, as without it.
func (b *Isolator) keptExec(ctx context.Context, e Engine, addr Address, p *isolator.Plan, spec *Spec, ahead *future[dockercontainer.InspectResponse]) (id string, fresh bool, ex dockercontainer.ExecCreateResponse, err error) {
	for {
		early := false
		var env []string // the running container's environment, when its inspect is at hand
		if ahead != nil {
			in, ierr := ahead.get()
			ahead = nil
			switch {
			case ierr == nil && runningFor(in, spec):
				id, early, env = in.ID, true, in.Config.Env
			case cerrdefs.IsNotFound(ierr):
				id, err = b.createKept(ctx, e, addr, spec)
				if cerrdefs.IsConflict(err) {
					continue
				}
				if err != nil {
					return "", false, ex, err
				}
				fresh, early = true, true
			}
		}
		if !early {
			if id, fresh, err = b.keptContainer(ctx, e, addr, spec); err != nil {
				return "", false, ex, err
			}
		}
		b.phase("container")
		if p.Egress.NeedsFirewall() {
			if err := b.ensureKeptFirewall(ctx, e, p, spec, id); err != nil {
				if early && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)) {
					continue
				}
				return "", false, ex, err
			}
		}
		ex, err = e.ContainerExecCreate(ctx, id, sessionExec(*spec.Exec, env))
		switch {
		case err == nil:
			return id, fresh, ex, nil
		case early && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)):
			continue
		}
		return "", false, ex, fmt.Errorf("%w: creating the exec in %s: %w", isolator.ErrProtection, spec.Name, err)
	}
}

// runningWith reports whether in shows a container running with the spec labelled
// hash. Pure.
func runningWith(in dockercontainer.InspectResponse, hash string) bool {
	return in.Config != nil && in.Config.Labels[LabelSpec] == hash && in.State != nil && in.State.Running
}

// runningFor reports whether in shows a kept container running that may serve spec
// (reusable). Pure.
func runningFor(in dockercontainer.InspectResponse, spec *Spec) bool {
	return reusable(in, spec) && in.State != nil && in.State.Running
}

// reusable reports whether in, the kept container's inspect, may serve spec: made
// from spec's hash, and binding none of this host's agent relays unless
// docker.agent_bind is on. The bind is not in the hash: a container made without it,
// or with another relays' directory, serves a session with the key on, which takes
// the stream until the container is recreated (turning the key on recreates
// nothing: the bind only saves time, and a recreation is refused while another
// session is attached). But the key off is DESIGN guarantee 11's default, no host
// socket bound into the sandbox: a container made while it was on is not reused
// once it is off, but recreated. Pure.
func reusable(in dockercontainer.InspectResponse, spec *Spec) bool {
	return in.Config != nil && in.Config.Labels[LabelSpec] == spec.Hash && (spec.AgentBindOn || !bindsAnyAgent(in))
}

// outdated says why the kept container in may not serve spec (reusable is false).
// Pure.
func outdated(in dockercontainer.InspectResponse, spec *Spec) string {
	old := ""
	if in.Config != nil {
		old = in.Config.Labels[LabelSpec]
	}
	if old == spec.Hash {
		return "binds this host's ssh agent relays (it was made while docker.agent_bind was on, and the key is now off)"
	}
	return fmt.Sprintf("was made from another configuration (spec %s, now %s)", old, spec.Hash)
}

// keptContainer returns the id of the running kept container for spec, creating,
// starting or recreating it as needed; fresh tells it was not running.
func (b *Isolator) keptContainer(ctx context.Context, e Engine, addr Address, spec *Spec) (id string, fresh bool, err error) {
	in, err := e.ContainerInspect(ctx, spec.Name)
	switch {
	case cerrdefs.IsNotFound(err):
		id, err := b.createKept(ctx, e, addr, spec)
		return id, true, err
	case err != nil:
		st := engineDown(addr, err)
		return "", false, fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	if reusable(in, spec) {
		if (in.State == nil || !in.State.Running) && spec.Anchored {
			// Its anchors' volumes name the descriptors of the run that created it,
			// gone (or another process's now): made again, with this run's.
			if err := e.ContainerRemove(ctx, in.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
				return "", false, fmt.Errorf("removing the stopped kept container %s: %w", spec.Name, err)
			}
			id, err := b.createKept(ctx, e, addr, spec)
			return id, true, err
		}
		if in.State == nil || !in.State.Running {
			if err := e.ContainerStart(ctx, in.ID, dockercontainer.StartOptions{}); err != nil {
				return "", false, fmt.Errorf("%w: starting the kept container %s: %w", isolator.ErrProtection, spec.Name, err)
			}
			return in.ID, true, nil
		}
		return in.ID, false, nil
	}
	// The configuration changed: recreate, unless someone is using it.
	if in.State != nil && in.State.Running {
		for _, x := range in.ExecIDs {
			xi, err := e.ContainerExecInspect(ctx, x)
			if err == nil && xi.Running {
				return "", false, fmt.Errorf("%w: the kept container %s %s and another session is attached to it; end that session first, or run without --keep-container", ErrSpecChanged, spec.Name, outdated(in, spec))
			}
		}
	}
	if in.Config != nil && in.Config.Labels[LabelSpec] == spec.Hash {
		b.warn("the kept container %s %s; recreating it", spec.Name, outdated(in, spec))
	} else {
		b.warn("the configuration changed since the kept container %s was created; recreating it", spec.Name)
	}
	if err := e.ContainerRemove(ctx, in.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return "", false, fmt.Errorf("removing the outdated kept container %s: %w", spec.Name, err)
	}
	id, err = b.createKept(ctx, e, addr, spec)
	return id, true, err
}

// createKept creates and starts the kept container.
func (b *Isolator) createKept(ctx context.Context, e Engine, addr Address, spec *Spec) (string, error) {
	created, err := e.ContainerCreate(ctx, spec.Config, spec.Host, spec.Network, nil, spec.Name)
	if err != nil && agentUnseen(err, spec) {
		spec.agentVerdict.note()
		dropAgentBind(spec) // the stream instead (agent.go)
		created, err = e.ContainerCreate(ctx, spec.Config, spec.Host, spec.Network, nil, spec.Name)
	}
	if err != nil {
		return "", b.createFailed(ctx, e, addr, spec, err)
	}
	if err := b.limitsDiscarded(created.Warnings); err != nil {
		remove(ctx, e, created.ID)
		return "", err
	}
	if err := e.ContainerStart(ctx, created.ID, dockercontainer.StartOptions{}); err != nil {
		remove(ctx, e, created.ID)
		return "", fmt.Errorf("%w: the docker engine could not start the kept container: %w; the command did not run", isolator.ErrProtection, err)
	}
	return created.ID, nil
}

// touch records a use of the project (prune's "unused for N days").
func touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// startFirst reports whether the session's command may start before its hello
// reaches the init (wire.StartFirstArg): the hello carries nothing (no secret,
// no terminal, no out-of-memory nonce) and nothing must be ready first (no companion:
// egress proxy, published ports; no egress rules; no ssh agent served by the
// session's own exec, which starts after the session's, agent.go). A kept container
// that binds the agent's relay (agentBound) may start first: its init proves the
// socket, or asks for the exec, before the command starts, and the key it proves
// it with is in its manifest, not the hello. Pure.
func startFirst(p *isolator.Plan, h *wire.Hello, agentBound bool) bool {
	return h != nil && h.CarriesNothing() &&
		!needsCompanion(p) && !p.Egress.NeedsFirewall() && p.Limits.Memory == 0 && (p.SSHAgent.Socket == "" || agentBound)
}

// withStartFirst is spec with its exec's init told to start the command before the
// hello arrives (wire.StartFirstArg). The exec is not part of the kept
// container's spec (its hash). Pure.
func withStartFirst(spec *Spec) *Spec {
	if spec.Exec == nil {
		return spec
	}
	i := slices.Index(spec.Exec.Cmd, "--")
	if i < 0 {
		return spec
	}
	s, x := *spec, *spec.Exec
	x.Cmd = slices.Concat(spec.Exec.Cmd[:i], []string{wire.StartFirstArg}, spec.Exec.Cmd[i:])
	s.Exec = &x
	return &s
}

// sessionExec is x, the session's exec, as it may run in a kept container whose
// environment is env (nil: not known). The session's init starts on one P with the
// GOMAXPROCS=1 the exec adds, and removes it before the command starts
// (wire.UnsetGOMAXPROCSArg): the command would then lose a GOMAXPROCS its image sets,
// which the exec's variable replaces. So both are kept only where the container's
// environment is known to set none (the running container's inspect: a warm run);
// a run that made or looked the container up again pays the runtime's default Ps
// (a fraction of a millisecond beside the container's start). Pure.
func sessionExec(x dockercontainer.ExecOptions, env []string) dockercontainer.ExecOptions {
	if env != nil && !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GOMAXPROCS=") }) {
		return x
	}
	end := slices.Index(x.Cmd, "--")
	if end < 0 {
		end = len(x.Cmd)
	}
	i := slices.Index(x.Cmd[:end], wire.UnsetGOMAXPROCSArg)
	if i < 0 {
		return x
	}
	x.Cmd = slices.Concat(x.Cmd[:i], x.Cmd[i+1:])
	x.Env = slices.DeleteFunc(slices.Clone(x.Env), func(e string) bool { return e == wire.InitGOMAXPROCS })
	return x
}
