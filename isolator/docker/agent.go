package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"time"

	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
)

// The ssh agent reaches a container through the Engine API, whatever the engine:
// nothing of this host's is bound for it (DESIGN guarantee 11), so it works alike on
// a local engine, Docker Desktop (whose VM passes no Unix socket) and a remote engine.
// An exec in the container, devsandbox-init with sshagent.CarryArg, serves the socket
// SSH_AUTH_SOCK names, in a tmpfs of the container's (container.AgentDir), and
// carries each connection over the exec's standard streams to this host, where
// sshagent.ServeStream filters every request as the relay does and passes what it
// allows to the host's agent. The exec runs as root without a capability (the
// container's), in a directory of root's: the command, another user, can neither
// signal it, nor write to its streams, nor replace its socket. What it sends is
// judged here all the same, bounded, never trusted: it is in the sandbox.

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

// agentExec renders the exec that serves the agent at sock. Pure.
func agentExec(sock string) dockercontainer.ExecOptions {
	return dockercontainer.ExecOptions{
		User:         "0:0",
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
	ex, err := e.ContainerExecCreate(ctx, id, agentExec(sock))
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
