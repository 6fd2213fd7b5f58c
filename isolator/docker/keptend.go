package docker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// A kept container's session ends before the watch's last look at what it wrote (its
// services' stop) only once none of its processes runs: a process of it that outlived
// that look could write what host git obeys with nothing left to catch it. The
// session's init says so itself, last on its stderr, once the kernel says it has no
// child left (wire.EndMarker, with the hello's End nonce, which the command cannot
// read: the init is not dumpable). Without that report (its command killed or
// stopped the init, the host ended the stream after the stop grace, or devsandbox was
// killed) the run asks the container's keeper, by the session's id, to end what is
// left of the session and confirm (endSession); a run that gets no confirmation fails.

// endSessionLimit bounds the run's request to the keeper to end its session.
const endSessionLimit = 30 * time.Second

// withSessionID is spec with its exec's init told the session's id (wire.SessionIDArg).
// The exec is not part of the kept container's spec (its hash). Pure.
func withSessionID(spec *Spec, id string) *Spec {
	if spec.Exec == nil {
		return spec
	}
	i := slices.Index(spec.Exec.Cmd, "--")
	if i < 0 {
		return spec
	}
	s, x := *spec, *spec.Exec
	x.Cmd = slices.Concat(spec.Exec.Cmd[:i], []string{wire.SessionIDArg + id}, spec.Exec.Cmd[i:])
	s.Exec = &x
	return &s
}

// endCmd is the exec that asks the keeper to end session id: the session's init (the
// first two words of its exec, session) in its role end. Pure.
func endCmd(session []string, id string) []string {
	return []string{session[0], session[1], "--role=end", "--", id}
}

// endSession ends what is left of the session id in the kept container cid (spec's)
// and returns nil once none of its processes runs: the keeper confirmed it, or the
// container does not run any more.
func (b *Isolator) endSession(ctx context.Context, e Engine, cid string, spec *Spec, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endSessionLimit)
	defer cancel()
	stopped := func() bool {
		in, err := e.ContainerInspect(ctx, cid)
		return cerrdefs.IsNotFound(err) || (err == nil && in.State != nil && !in.State.Running && !in.State.Paused)
	}
	failed := func(why string) error {
		return fmt.Errorf("%w: the session's processes in the kept container %s could not be confirmed ended (%s), so what they write from now on is not checked: remove the container (docker rm -f %s; the sandbox home stays), then check the project's .git for changes you did not make", isolator.ErrProtection, spec.Name, why, spec.Name)
	}
	ex, err := e.ContainerExecCreate(ctx, cid, dockercontainer.ExecOptions{
		User: spec.Exec.User, AttachStdout: true, AttachStderr: true, Cmd: endCmd(spec.Exec.Cmd, id),
	})
	if err != nil {
		if stopped() {
			return nil
		}
		return failed(err.Error())
	}
	hj, err := e.ContainerExecAttach(ctx, ex.ID, dockercontainer.ExecAttachOptions{})
	if err != nil {
		if stopped() {
			return nil
		}
		return failed(err.Error())
	}
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, hj.Reader)
	hj.Close()
	for {
		in, err := e.ContainerExecInspect(ctx, ex.ID)
		switch {
		case err == nil && !in.Running && in.ExitCode == 0:
			return nil
		case err == nil && in.Running && ctx.Err() == nil:
			time.Sleep(5 * time.Millisecond) // its output ended: its status follows at once
			continue
		case stopped():
			return nil
		case err != nil:
			return failed(err.Error())
		}
		return failed(strings.TrimSpace(out.String()))
	}
}
