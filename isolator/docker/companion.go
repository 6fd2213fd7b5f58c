package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/companion"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// Labels of the session's companion and its endpoint volume.
const (
	LabelSession  = "dev.devsandbox.session" // the session id
	roleCompanion = "companion"
	companionDir  = "/ep" // the endpoint volume in the companion
)

// companionBound bounds the wait for the companion: its start and ready line, and its
// end (it gives requests in flight 2 s and flushes its audit records).
const (
	companionReady = 30 * time.Second
	companionEnd   = 5 * time.Second
)

// endpointVolume is the name of the engine-side volume a run shares with its
// session's companion: the project's, for a kept container (its sessions come and
// go), the session's own otherwise.
func endpointVolume(p *isolator.Plan, keep bool) string {
	if keep {
		return "devsandbox-" + p.Project.Name + "-ep"
	}
	return "devsandbox-" + p.Project.Name + "-ep-" + p.Proxy.Session
}

// needsCompanion reports whether p's egress needs the session's companion.
func needsCompanion(p *isolator.Plan) bool {
	return p.Egress.NeedsProxy() || len(p.Egress.Forwards) > 0
}

// endpointVolumeOptions creates the endpoint volume: in memory (the sockets only),
// the sandbox user's, mode 0700.
func endpointVolumeOptions(p *isolator.Plan, name string, labels map[string]string) volume.CreateOptions {
	uid, gid := p.User.InContainer()
	return volume.CreateOptions{Name: name, Driver: "local", Labels: labels, DriverOpts: map[string]string{
		"type": "tmpfs", "device": "tmpfs",
		"o": fmt.Sprintf("uid=%d,gid=%d,mode=0700,size=16m", uid, gid),
	}}
}

// companionConfig renders the session's companion: devsandbox-proxy (in the derived
// image) as the sandbox's user, with no capability, no_new_privs and a read-only root
// file system, on the engine's
// default network, with the endpoint volume, publishing each published port on the
// engine host's 127.0.0.1. Its environment is none of the image's (imageEnv, removed:
// imageenv.go); it, command and labels hold no secret: the
// policy and the secrets arrive on its stdin. Pure.
func companionConfig(p *isolator.Plan, image string, imageEnv []string, volume string, labels map[string]string, publish bool) (*dockercontainer.Config, *dockercontainer.HostConfig) {
	l := map[string]string{LabelRole: roleCompanion, LabelKept: "false", LabelSession: p.Proxy.Session}
	for _, k := range []string{LabelProject, LabelName, LabelDir, LabelVersion, LabelUser} {
		if v, ok := labels[k]; ok {
			l[k] = v
		}
	}
	pids := int64(512)
	noInit := false
	uid, gid := p.User.InContainer()
	cfg := &dockercontainer.Config{
		User:         fmt.Sprintf("%d:%d", uid, gid),
		Image:        image,
		Entrypoint:   []string{container.ShipDir + "/" + proxyName},
		Cmd:          []string{companion.Arg},
		WorkingDir:   "/",
		Env:          unsetImageEnv(imageEnv, nil),
		Healthcheck:  noHealthcheck(),
		Labels:       ownLabels(l),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode: "default",
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		// Nothing of the companion's is writable but the endpoint volume, where its
		// sockets are: a process that got into it (a compromised dependency of the
		// proxy) can plant or replace no file for a kept container's next session,
		// which execs devsandbox-proxy there again; on a rootless engine the
		// companion is the container's root, the owner of the image's files. No /tmp
		// and no /dev/shm (an IPC namespace of its own, without one): devsandbox-proxy
		// writes no file. Nor message queues: with a limit of 0 bytes for them,
		// none can be made (the IPC namespace's /dev/mqueue, and mq_open, fail with
		// EMFILE), so none outlives a session of a kept companion.
		ReadonlyRootfs: true,
		IpcMode:        dockercontainer.IPCModeNone,
		Binds:          []string{volume + ":" + companionDir},
		AutoRemove:     true,
		Resources: dockercontainer.Resources{PidsLimit: &pids,
			Ulimits: []*dockercontainer.Ulimit{{Name: "msgqueue", Soft: 0, Hard: 0}}},
		// devsandbox-proxy is pid 1, whatever the engine's default (an init of its
		// own, dockerd's "init": true): a session's own companion is that one
		// process, and a kept companion's holder (companion.Hold) the one that
		// adopts what an ended session left.
		Init: &noInit,
	}
	if publish && len(p.Egress.Forwards) > 0 {
		cfg.ExposedPorts = nat.PortSet{}
		hc.PortBindings = nat.PortMap{}
		for _, f := range p.Egress.Forwards {
			port := nat.Port(strconv.Itoa(int(f.HostPort)) + "/tcp")
			cfg.ExposedPorts[port] = struct{}{}
			hc.PortBindings[port] = []nat.PortBinding{{HostIP: "127.0.0.1", HostPort: strconv.Itoa(int(f.HostPort))}}
		}
	}
	return cfg, hc
}

// companionRequest is what the companion is told: the proxy's settings and their
// secrets (the CA, credential values and placeholders), the certificate roots the host
// names, this machine's addresses when the engine's socket is on it (a local engine's,
// or a relay's, whose engine may reach them as well), and the ports.
func companionRequest(p *isolator.Plan, local bool) (companion.Request, error) {
	req := companion.Request{Session: p.Proxy.Session, Dir: companionDir}
	for _, f := range p.Egress.Forwards {
		req.Publish = append(req.Publish, companion.Port{Listen: int(f.HostPort), Sandbox: int(f.SandboxPort)})
	}
	if !p.Egress.NeedsProxy() {
		return req, nil
	}
	settings, err := json.Marshal(service.SettingsOf(p))
	if err != nil {
		return req, err
	}
	req.Proxy = settings
	env, err := service.Environ(p, os.ReadFile)
	if err != nil {
		return req, err
	}
	req.Secrets = map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "SSL_CERT_FILE":
			req.Roots = append(req.Roots, readRoots(v)...)
		case "SSL_CERT_DIR":
			for _, d := range filepath.SplitList(v) {
				files, _ := filepath.Glob(filepath.Join(d, "*"))
				for _, f := range files {
					req.Roots = append(req.Roots, readRoots(f)...)
				}
			}
		default:
			req.Secrets[k] = v
		}
	}
	if local {
		// The host's own addresses, which no name entry opens: none known would let a
		// name reach the host's services, so the companion does not start.
		addrs, err := hostaddr.Read()
		if err != nil {
			return req, fmt.Errorf("the egress proxy needs this host's addresses, to refuse them: %w", err)
		}
		for _, a := range addrs {
			req.Refuse = append(req.Refuse, a.String())
		}
	}
	return req, nil
}

// readRoots is the PEM file f's content ending in a newline, or nothing.
func readRoots(f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil || !bytes.Contains(b, []byte("-----BEGIN")) {
		return nil
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	return b
}

// sessionCompanion is a running companion.
type sessionCompanion struct {
	e       Engine
	id      string
	hj      types.HijackedResponse
	ready   chan error // its ready line, or why not
	relayed chan error // the end of its audit stream
	removed <-chan dockercontainer.WaitResponse
	stderr  lockedBuffer
	exec    bool // a process exec'd in the kept companion (keptcompanion.go)
}

// lockedBuffer collects the companion's diagnostics.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 64<<10 {
		l.b.Write(b)
	}
	return len(b), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(bytes.TrimSpace(l.b.Bytes()))
}

// ensureEndpointVolume creates the endpoint volume of p's run unless it exists (a kept
// container's), before the sandbox or the companion mounts it: the engine would make
// a missing one an ordinary volume, root's.
func ensureEndpointVolume(ctx context.Context, e Engine, p *isolator.Plan, keep bool, labels map[string]string) error {
	name := endpointVolume(p, keep)
	if _, err := e.VolumeCreate(ctx, endpointVolumeOptions(p, name, endpointLabels(p, keep, labels))); err != nil {
		return fmt.Errorf("%w: creating the endpoint volume %s in the docker engine: %w; the command did not run", isolator.ErrProtection, name, err)
	}
	return nil
}

// endpointLabels are the labels of p's endpoint volume, from the run's container
// labels.
func endpointLabels(p *isolator.Plan, keep bool, labels map[string]string) map[string]string {
	vl := map[string]string{}
	for _, k := range []string{LabelProject, LabelName, LabelDir, LabelUser} {
		vl[k] = labels[k]
	}
	if !keep {
		vl[LabelSession], vl[LabelOwner] = p.Proxy.Session, owner()
	}
	return vl
}

// projectLabels are the labels of p's containers that name the project and the user
// (translate sets them, among others).
func projectLabels(p *isolator.Plan) map[string]string {
	return map[string]string{LabelProject: p.Project.ID, LabelName: p.Project.Name, LabelDir: p.Project.Dir, LabelUser: fmt.Sprint(p.User.UID)}
}

// startCompanion starts the session's companion: the container, the request on its
// stdin; the audit records it streams are appended to
// the project's audit log as they come. It does not wait for the ready line (see
// waitReady). The endpoint volume exists (ensureEndpointVolume); the session's
// pendingCompanion removes it, not the companion: the sandbox's container may still
// be made after the companion failed, and would make the engine create a volume of
// that name itself.
func (b *Isolator) startCompanion(ctx context.Context, e Engine, p *isolator.Plan, image string, imageEnv []string, keep bool, pr programs, labels map[string]string, req companion.Request, refuse func() ([]string, error)) (*sessionCompanion, error) {
	vol := endpointVolume(p, keep)
	c := &sessionCompanion{e: e, ready: make(chan error, 1), relayed: make(chan error, 1)}
	cfg, hc := companionConfig(p, image, imageEnv, vol, labels, req.Publish != nil)
	created, err := createNamed(ctx, e, cfg, hc, nil, "devsandbox-"+p.Project.Name+"-px-"+container.RandomSuffix())
	if err != nil {
		return nil, companionFailed("the engine refused the companion container: %v", err)
	}
	c.id = created.ID
	started := false
	defer func() {
		if !started {
			_ = e.ContainerRemove(context.WithoutCancel(ctx), c.id, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
		}
	}()
	if c.hj, err = e.ContainerAttach(ctx, c.id, dockercontainer.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true}); err != nil {
		return nil, companionFailed("attaching to the companion: %v", err)
	}
	c.removed, _ = e.ContainerWait(context.WithoutCancel(ctx), c.id, dockercontainer.WaitConditionRemoved)
	if err := e.ContainerStart(ctx, c.id, dockercontainer.StartOptions{}); err != nil {
		c.hj.Close()
		if len(p.Egress.Forwards) > 0 {
			return nil, companionFailed("%v; a published port may be in use on the engine's host: pick another with --publish HOST_PORT:SANDBOX_PORT", err)
		}
		return nil, companionFailed("starting the companion: %v", err)
	}
	started = true
	if err := c.begin(req, p, refuse); err != nil {
		c.stop(ctx)
		return nil, err
	}
	return c, nil
}

// companionFailed is why the session's egress services did not start.
func companionFailed(format string, args ...any) error {
	return fmt.Errorf("%w: the session's egress services could not start in the docker engine: %s; the command did not run", isolator.ErrProtection, fmt.Sprintf(format, args...))
}

// begin sends the companion's process (attached as c.hj) its request and relays what
// it writes: its ready line, then its audit records. refuse, when not nil, gives the
// engine host's addresses the proxy refuses (req.Refuse), awaited here.
func (c *sessionCompanion) begin(req companion.Request, p *isolator.Plan, refuse func() ([]string, error)) error {
	if req.Proxy != nil && refuse != nil {
		addrs, err := refuse()
		if err != nil {
			return err
		}
		req.Refuse = append(slices.Clip(req.Refuse), addrs...)
	}
	if err := companion.WriteRequest(c.hj.Conn, req); err != nil {
		return companionFailed("sending the companion its request: %v", err)
	}
	out, outW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, &c.stderr, c.hj.Reader)
		outW.CloseWithError(err)
	}()
	go c.serve(bufio.NewReader(out), p)
	return nil
}

// serve reads the companion's ready line, then relays its audit stream into the
// project's audit log until the stream ends.
func (c *sessionCompanion) serve(out *bufio.Reader, p *isolator.Plan) {
	err := companion.AwaitReady(out)
	c.ready <- err
	if err != nil {
		_, _ = io.Copy(io.Discard, out)
		c.relayed <- nil
		return
	}
	w, err := audit.Open(p.StateDir, p.Proxy.Session, audit.Options{})
	if err != nil {
		_, _ = io.Copy(io.Discard, out)
		c.relayed <- err
		return
	}
	err = w.Relay(out)
	c.relayed <- errors.Join(err, w.Close())
}

// waitReady returns once the companion listens, or why it does not.
func (c *sessionCompanion) waitReady(ctx context.Context) error {
	failed := func(why string) error {
		if s := c.stderr.String(); s != "" {
			why += ": " + s
		}
		return fmt.Errorf("%w: the session's egress services did not start in the docker engine: %s; the command did not run", isolator.ErrProtection, why)
	}
	select {
	case err := <-c.ready:
		if err != nil {
			return failed(err.Error())
		}
		return nil
	case <-time.After(companionReady):
		return failed(fmt.Sprintf("no answer within %v", companionReady))
	case <-ctx.Done():
		return failed(ctx.Err().Error())
	}
}

// stop ends the companion: the end of its stdin tells it the session is over; its
// audit records are relayed to the end (bounded by companionEnd) and the container is
// gone (AutoRemove). It returns the relay's error, if any, for a warning.
func (c *sessionCompanion) stop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	_ = c.hj.CloseWrite()
	var err error
	select {
	case err = <-c.relayed:
	case <-time.After(companionEnd):
		err = fmt.Errorf("the companion did not end within %v", companionEnd)
	}
	c.hj.Close()
	if c.exec {
		// The kept companion stays; this session's process ended with its stdin.
		return err
	}
	select {
	case <-c.removed:
	case <-time.After(companionEnd):
		_ = c.e.ContainerRemove(ctx, c.id, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	return err
}

// removeVolume removes the session's endpoint volume (not a kept container's), once
// the run's containers are gone (pendingCompanion.stop). The sandbox may not be gone
// yet when devsandbox was killed (the engine refuses to remove a volume in use): it
// tries again until companionEnd has passed; the next run removes what is left
// (sweep).
func (pc *pendingCompanion) removeVolume() {
	if pc.volume == "" {
		return
	}
	ctx := context.WithoutCancel(pc.ctx)
	defer func() { pc.volume = "" }()
	for deadline := time.Now().Add(companionEnd); ; time.Sleep(50 * time.Millisecond) {
		err := pc.e.VolumeRemove(ctx, pc.volume, false)
		if err == nil || cerrdefs.IsNotFound(err) || time.Now().After(deadline) {
			return
		}
	}
}

// pendingCompanion is the session's egress services, started beside the sandbox: a
// companion container of the session's own, or, for a kept container, a process in
// its companion and, with published ports, a container of the session's own for those.
type pendingCompanion struct {
	b    *Isolator
	e    Engine
	ctx  context.Context
	done chan struct{}
	cs   []*sessionCompanion // none: the run needs none, or it failed (err)
	err  error
	// volume is the session's own endpoint volume (not a kept container's), removed
	// by stop: the run calls it once its sandbox's container is gone, whether the
	// companion started or not (a container made after the volume's removal would
	// make the engine create one of that name, unlabelled, that nothing removes).
	volume string
}

// goCompanion starts the session's egress services, if p needs them, without waiting.
func (b *Isolator) goCompanion(ctx context.Context, e Engine, addr Address, p *isolator.Plan, pr programs, spec *Spec) *pendingCompanion {
	pc := &pendingCompanion{b: b, e: e, ctx: ctx, done: make(chan struct{})}
	if !needsCompanion(p) {
		close(pc.done)
		return pc
	}
	keep := spec.Exec != nil
	if pc.err = ensureEndpointVolume(ctx, e, p, keep, spec.Config.Labels); pc.err != nil {
		close(pc.done)
		return pc
	}
	if !keep {
		pc.volume = endpointVolume(p, keep)
	}
	if p.Egress.NeedsProxy() && spec.engineHostAhead == nil && !b.hostNetwork(addr) {
		// The companion sees its own addresses and its gateway, not the engine host's
		// others: they are read on that host's network, while the companion starts.
		// A Unix socket's engine also gets this machine's (companionRequest): the
		// socket's relay, or slirp4netns for a rootless engine, reaches them.
		spec.engineHostAhead = fetch(func() ([]string, error) {
			return engineHostAddresses(ctx, e, addr, p, spec.Config.Image, spec.ImageEnv, spec.Config.Labels)
		}).get
	}
	go func() {
		defer close(pc.done)
		req, err := companionRequest(p, addr.Local())
		if err != nil {
			pc.err = err
			return
		}
		start := func(req companion.Request) error {
			c, err := b.startCompanion(ctx, e, p, spec.Config.Image, spec.ImageEnv, keep, pr, spec.Config.Labels, req, spec.engineHostAhead)
			if err == nil {
				pc.cs = append(pc.cs, c)
			}
			return err
		}
		switch {
		case !keep || !p.Egress.NeedsProxy():
			pc.err = start(req)
		default:
			pc.err = b.keptSession(ctx, e, p, pr, spec, req, pc, start)
		}
		if pc.err == nil {
			b.phase("companion")
		} else {
			pc.stopAll()
		}
	}()
	return pc
}

// failed is why the companion could not even be started (its endpoint volume), or nil
// while it starts.
func (pc *pendingCompanion) failed() error {
	select {
	case <-pc.done:
		return pc.err
	default:
	}
	return nil
}

// ready returns once the session's egress services serve (at once without them).
func (pc *pendingCompanion) ready(ctx context.Context) error {
	<-pc.done
	if pc.err != nil {
		return pc.err
	}
	for _, c := range pc.cs {
		if err := c.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stop ends the session's egress services (see sessionCompanion.stop) and removes the
// session's endpoint volume. The run calls it once its sandbox's container is gone.
func (pc *pendingCompanion) stop() {
	<-pc.done
	pc.stopAll()
	pc.removeVolume()
}

func (pc *pendingCompanion) stopAll() {
	for _, c := range pc.cs {
		if err := c.stop(pc.ctx); err != nil {
			pc.b.warn("the session's proxy in the docker engine: %v", err)
		}
	}
	pc.cs = nil
}
