package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
)

// By default the ssh agent reaches a container through the Engine API, whatever the
// engine: nothing of this host's is bound for it (DESIGN guarantee 11), so it works
// alike on a local engine, Docker Desktop (whose VM passes no Unix socket) and a remote engine.
// An exec in the container, devsandbox-init with sshagent.CarryArg, serves the socket
// SSH_AUTH_SOCK names, in a tmpfs of the container's (container.AgentDir), and
// carries each connection over the exec's standard streams to this host, where
// sshagent.ServeStream filters every request as the relay does and passes what it
// allows to the host's agent. The exec runs as another container uid than the
// command's, without a capability, in a tmpfs of that uid's (container.AgentCarrier:
// root for a command of the user's uid; on a rootless engine, whose command is the
// container's root, a subordinate id): the command can neither signal nor trace
// it, nor write to its streams, nor replace its socket. What it sends is judged
// here all the same, bounded, never trusted: it is in the sandbox.

// agentReady bounds the wait for the exec's hello.
const agentReady = 30 * time.Second

// agentSocket is where p's container serves the session's agent, or "" when p
// forwards none.
func agentSocket(p *isolator.Plan) string {
	if p.SSHAgent.Socket == "" {
		return ""
	}
	return path.Join(container.AgentDir, p.Proxy.Session+".sock")
}

// agentless is p without the bind of the agent relay's socket, which the planner
// adds for the backends that bind it: the container serves the agent itself. Pure;
// p is not changed.
func agentless(p *isolator.Plan) *isolator.Plan {
	if p.SSHAgent.Socket == "" {
		return p
	}
	q := *p
	q.Mounts = slices.DeleteFunc(slices.Clone(p.Mounts), func(m isolator.Mount) bool {
		return m.Kind == isolator.Bind && m.Source == p.SSHAgent.Socket
	})
	return &q
}

// agentExec renders the exec that serves the agent at sock for a command run as u:
// as container.AgentCarrier, the owner of the socket's directory. Pure.
func agentExec(sock string, u isolator.User) dockercontainer.ExecOptions {
	uid, gid := container.AgentCarrier(u)
	return dockercontainer.ExecOptions{
		User:         fmt.Sprintf("%d:%d", uid, gid),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		WorkingDir:   "/",
		Cmd:          []string{InitPath, sshagent.CarryArg + sock},
	}
}

// agentStream is a session's agent carried over an exec's streams.
type agentStream struct {
	hj     types.HijackedResponse
	ready  chan error // the exec's hello seen, or why not
	served chan error // ServeStream's end
	stderr lockedBuffer
}

// startAgent starts p's agent exec in the running container id and serves its
// stream without waiting for its hello (waitReady). It returns nil when p forwards
// no agent.
func (b *Isolator) startAgent(ctx context.Context, e Engine, p *isolator.Plan, id string) (*agentStream, error) {
	sock := agentSocket(p)
	if sock == "" {
		return nil, nil
	}
	failed := func(format string, args ...any) error {
		return fmt.Errorf("%w: the ssh agent could not be forwarded into the container: %s; the command did not run. Unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", isolator.ErrProtection, fmt.Sprintf(format, args...))
	}
	ex, err := e.ContainerExecCreate(ctx, id, agentExec(sock, p.User))
	if err != nil {
		return nil, failed("creating its exec: %v", err)
	}
	a := &agentStream{ready: make(chan error, 1), served: make(chan error, 1)}
	if a.hj, err = e.ContainerExecAttach(ctx, ex.ID, dockercontainer.ExecAttachOptions{}); err != nil {
		return nil, failed("starting its exec: %v", err)
	}
	out, outW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, &a.stderr, a.hj.Reader)
		outW.CloseWithError(err)
	}()
	go func() {
		in := bufio.NewReader(out)
		hello, err := in.Peek(len(sshagent.StreamHello))
		if err == nil && string(hello) != sshagent.StreamHello {
			err = fmt.Errorf("it said %q", hello)
		}
		a.ready <- err
		err = sshagent.ServeStream(in, a.hj.Conn, p.SSHAgent.Upstream)
		_, _ = io.Copy(io.Discard, out)
		a.served <- err
	}()
	return a, nil
}

// waitReady returns once the container serves the agent's socket, or why not. A nil
// a is ready.
func (a *agentStream) waitReady(ctx context.Context) error {
	if a == nil {
		return nil
	}
	failed := func(why string) error {
		if s := a.stderr.String(); s != "" {
			why += ": " + s
		}
		return fmt.Errorf("%w: the ssh agent could not be forwarded into the container: %s; the command did not run. Unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", isolator.ErrProtection, why)
	}
	select {
	case err := <-a.ready:
		if err != nil {
			return failed("its exec did not start serving: " + err.Error())
		}
		return nil
	case <-time.After(agentReady):
		return failed(fmt.Sprintf("its exec did not answer within %v", agentReady))
	case <-ctx.Done():
		return failed(ctx.Err().Error())
	}
}

// stop ends the session's agent: the end of the exec's stdin ends the exec (it
// removes its socket), and stop returns once the stream's connections to the host's
// agent are closed (bounded by companionEnd: the exec may be gone already, or the
// engine). A nil a does nothing.
func (a *agentStream) stop() {
	if a == nil {
		return
	}
	_ = a.hj.CloseWrite()
	select {
	case <-a.served:
	case <-time.After(companionEnd):
	}
	a.hj.Close()
}

// With docker.agent_bind (Options.BindAgent, off by default: it departs from DESIGN
// guarantee 11), a local engine (a Unix socket on Linux) is first asked to bind the
// session's relay socket, served on this host as for bwrap (same filter), read-only:
// a one-shot container binds the socket file alone at agentBoundFile, a kept one the
// kept sessions' relays' directory (sockdir.KeptAgentDir, sockets only) at
// agentBoundDir. "Local" is only a guess from the address (the engine may run in a
// mount namespace or a VM of its own, where the path is missing, or bound and never
// connecting), so the bind is never trusted: before the command starts, the init
// proves that this session's relay answers at the path (sshagent.Probe, with the
// key in its manifest) and only then gives it to the command. When the proof
// fails, the init says so (wire.AgentStreamMarker) and waits for the stream's socket, and this
// side starts the exec above (lazyAgent). An engine that refuses the bind's source
// (ContainerCreate: it cannot see it) gets the container without it, and the stream.
const (
	agentBoundFile = "/run/devsandbox/agent-host.sock"
	agentBoundDir  = "/run/devsandbox/agent-host"
)

// asksAgentBind reports whether a run of p on the engine at addr asks for the agent
// relay's bind: only with docker.agent_bind (Options.BindAgent), on a local engine,
// when p forwards an agent. Otherwise the stream, and no verdict is read or written.
func (b *Isolator) asksAgentBind(addr Address, p *isolator.Plan) bool {
	return b.BindAgent && addr.Local() && p.SSHAgent.Socket != ""
}

// bindAgent sets opts to bind p's relay socket (docker.agent_bind on a local engine,
// see above). Pure.
func bindAgent(p *isolator.Plan, opts *Options, key []byte) {
	if p.SSHAgent.Socket == "" {
		return
	}
	opts.AgentKey = key
	if opts.Keep {
		opts.AgentBind, opts.AgentBindTarget = path.Dir(p.SSHAgent.Socket), agentBoundDir
		opts.AgentBound = path.Join(agentBoundDir, path.Base(p.SSHAgent.Socket))
		return
	}
	opts.AgentBind, opts.AgentBindTarget, opts.AgentBound = p.SSHAgent.Socket, agentBoundFile, agentBoundFile
}

// agentVerdict remembers, in the project's state directory, that the engine at an
// address refused to bind the agent's relay from a socket directory, so that the
// project's next runs there take the stream at once rather than have a container
// refused first (a ContainerCreate round trip). It only ever turns the bind off, for
// agentVerdictFor; the stream works on every engine.
type agentVerdict struct {
	path   string // the record
	record string // engine address and socket directory
}

// agentVerdictFor is how long a refusal is remembered: an engine that starts seeing
// the directory (shared with Docker Desktop meanwhile) gets the bind back after it.
const agentVerdictFor = time.Hour

func newAgentVerdict(stateDir, engine, sockDir string) *agentVerdict {
	return &agentVerdict{path: filepath.Join(stateDir, "docker", "agent-unseen"), record: engine + "\n" + sockDir + "\n"}
}

// refused reports whether the engine refused the bind from this socket directory
// within agentVerdictFor.
func (v *agentVerdict) refused(now time.Time) bool {
	fi, err := os.Lstat(v.path)
	if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) > agentVerdictFor {
		return false
	}
	b, err := os.ReadFile(v.path)
	return err == nil && string(b) == v.record
}

// note records the engine's refusal. A nil v does nothing.
func (v *agentVerdict) note() {
	if v == nil {
		return
	}
	_ = os.MkdirAll(filepath.Dir(v.path), 0o700)
	_ = os.WriteFile(v.path, []byte(v.record), 0o600)
}

// dropAgentBind takes the agent's bind out of spec, whose container the engine
// refused for it: the init, finding no socket, asks for the stream.
func dropAgentBind(spec *Spec) {
	hc := *spec.Host
	hc.Mounts = slices.DeleteFunc(slices.Clone(hc.Mounts), func(m mount.Mount) bool {
		return m.Type == mount.TypeBind && m.Source == spec.AgentBind
	})
	spec.Host, spec.AgentBind = &hc, ""
}

// bindsAgent reports whether the container in binds source at agentBoundDir (a kept
// container's relays' directory). That the directory is still the one at source's
// path, the init's probe tells. Pure.
func bindsAgent(in dockercontainer.InspectResponse, source string) bool {
	return slices.ContainsFunc(in.Mounts, func(m dockercontainer.MountPoint) bool {
		return m.Type == mount.TypeBind && m.Destination == agentBoundDir && m.Source == source
	})
}

// bindsAnyAgent reports whether the container in binds anything at agentBoundDir:
// a kept container made with docker.agent_bind on a local engine, whatever relays'
// directory it binds. Its mounts show it; its configuration too, should an engine
// leave the mounts of a container that is not running out of its inspect. Pure.
func bindsAnyAgent(in dockercontainer.InspectResponse) bool {
	if slices.ContainsFunc(in.Mounts, func(m dockercontainer.MountPoint) bool { return m.Destination == agentBoundDir }) {
		return true
	}
	return in.ContainerJSONBase != nil && in.HostConfig != nil &&
		slices.ContainsFunc(in.HostConfig.Mounts, func(m mount.Mount) bool { return m.Target == agentBoundDir })
}

// agentUnseen reports whether err, a ContainerCreate's, refuses spec's agent bind.
func agentUnseen(err error, spec *Spec) bool {
	return spec.AgentBind != "" && unseenPath(err) == spec.AgentBind
}

// lazyAgent starts a session's agent exec when its init asks for it (the bound
// socket did not prove itself), and stops it with the session.
type lazyAgent struct {
	b    *Isolator
	ctx  context.Context
	e    Engine
	p    *isolator.Plan
	id   string
	fail func() // ends the session: the exec could not start

	mu       sync.Mutex
	ag       *agentStream
	asked    bool
	stopped  bool
	starting sync.WaitGroup
}

// onStream is wire.Report.OnAgentStream: it starts the exec without blocking the
// report's reader. The init waits for its socket (sandboxinit.AgentWait).
func (l *lazyAgent) onStream() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asked || l.stopped {
		return
	}
	l.asked = true
	l.starting.Add(1)
	go func() {
		defer l.starting.Done()
		l.b.phase("agent stream")
		ag, err := l.b.startAgent(l.ctx, l.e, l.p, l.id)
		if err != nil {
			l.b.warn("%v", err)
			l.fail()
			return
		}
		l.mu.Lock()
		l.ag = ag
		l.mu.Unlock()
	}()
}

// streamed reports whether the init asked for the stream.
func (l *lazyAgent) streamed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked
}

// stop stops the exec, if one was started. A nil l does nothing.
func (l *lazyAgent) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.starting.Wait()
	l.ag.stop()
}

// seen is called once the init reported: ready without a request for the stream,
// the command has the bound socket. A nil l does nothing.
func (l *lazyAgent) seen(r *wire.Report) {
	if ready, _ := r.Result(); l != nil && ready && !l.streamed() {
		l.b.phase("agent bound")
	}
}

// startAgentNow is startAgent for a container that binds no agent socket: the
// stream from the start.
func (b *Isolator) startAgentNow(ctx context.Context, e Engine, p *isolator.Plan, id string) (*agentStream, error) {
	if p.SSHAgent.Socket != "" {
		b.phase("agent stream")
	}
	return b.startAgent(ctx, e, p, id)
}
