package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
)

// Run implements isolator.Isolator. It keeps p's disk reserve (diskguard.Run).
func (b *Isolator) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	return diskguard.Run(ctx, p, func(ctx context.Context) (int, error) { return b.run(ctx, p, stdio) })
}

func (b *Isolator) run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (_ int, err error) {
	// launched is set once the run hands over to runOnce or runKept, which explain
	// their own failures (createFailed); a failure before that may have met an engine
	// that is gone, whichever request met it first (prepareFailed).
	launched := false
	defer func() {
		if err != nil && !launched {
			err = b.prepareFailed(ctx, err)
		}
	}()
	// Before anything of the project's is made or used: `sandboxes prune` keeps the
	// project's sandbox home and state, and sweeps leave its content volumes, while
	// the run holds it.
	mark, release, err := markRun(ctx, p.StateDir, stdio.Err, b.Signals)
	if err != nil {
		return 0, fmt.Errorf("marking the project's state directory %s in use: %w; the command did not run", p.StateDir, err)
	}
	defer release()
	b.mark = mark
	// The container serves the agent itself (agent.go): no bind of the relay.
	p = agentless(p)
	// The client the request's head started with, when there is one; everything
	// else (engineLost's fresh connection) dials anew.
	var e0 Engine
	var addr Address
	// The engine's answer to the connection's ping (the head start's, or sent now):
	// its verdict, which every request of the connection waits for (connect).
	var says *future[engineSays]
	if hs := b.head; hs != nil {
		e0, addr, says = hs.pick(), hs.addr, hs.says
		defer hs.bind(ctx)()
	} else if e0, addr, says, err = b.connect(ctx); errors.Is(err, errTLSMaterial) {
		return 0, fmt.Errorf("%w; %s", err, dialFix(err))
	} else if err != nil {
		return 0, err
	}
	defer e0.Close()
	// An engine whose socket is the user's is asked whether it is rootless
	// (rootless.go), while the host side is prepared; a root-owned socket's never.
	info := engineInfo(ctx, e0, ownEngine(addr, os.Getuid(), os.Stat), says)
	// Before anything of the run's crosses to the engine: over plain TCP a secret
	// is refused, anything else warned of. Over plain TCP to another machine, a
	// credential in a file sent as content still refuses the run (RefuseClearFiles,
	// below): the warning waits for that judgement, so a refused run prints the
	// refusal alone and one that goes ahead the warning once.
	clearWarning, err := addr.RefuseClear(p)
	if err != nil {
		return 0, err
	}
	warnClear := func() {
		if clearWarning != "" {
			b.warn("%s", clearWarning)
			clearWarning = ""
		}
	}
	if addr.Channel() != engineaddr.Clear {
		warnClear()
	}
	// Asked for now (or with the request's head, headstart.go), answered while the
	// host side is prepared (ahead.go).
	var ahead *aheadEngine
	if hs := b.head; hs != nil && hs.image != nil {
		ahead = &aheadEngine{Engine: e0, ref: b.Image, image: hs.image, says: says}
		hs.image = nil
	} else {
		// says is set before the inspect's goroutine starts: it reads it.
		ahead = inspectAhead(ctx, e0, b.Image, says)
	}
	defer ahead.wait()
	e := Engine(ahead)
	var kept *future[dockercontainer.InspectResponse]
	if b.Keep {
		name := keptName(p)
		if kept = b.head.keptInspect(name); kept == nil {
			kept = fetch(func() (dockercontainer.InspectResponse, error) {
				ahead.negotiated()
				return e0.ContainerInspect(ctx, name)
			})
		}
	}
	if b.Keep && needsCompanion(p) {
		// The kept container's endpoint volume, and the companion the session's
		// proxy runs in (keptcompanion.go). An engine whose socket is the user's may
		// be rootless, where the volume is the container's root's: it is made once
		// the engine has said (rootlessPlan).
		if info == nil {
			ahead.createVolumeAhead(ctx, endpointVolumeOptions(p, endpointVolume(p, true), endpointLabels(p, true, projectLabels(p))))
		}
		if p.Egress.NeedsProxy() {
			ahead.inspectContainerAhead(ctx, keptCompanionName(p))
		}
	}
	anchored := plansAnchors(p)
	if anchored && (b.head == nil || b.head.version == nil) {
		// Its API version decides how the anchors are mounted (below); a head
		// start's negotiation asked for it already.
		ahead.pingAhead(ctx)
	}
	p0, o0 := p, b.Options // p is replaced (pins) while the names are drawn
	ahead.inspectVolumesAhead(ctx, func() []string { return aheadVolumes(p0, o0, addr) })
	// With docker.agent_bind, a local engine is asked to bind the agent relay's
	// socket first (agent.go); without it (the default) the agent takes the stream
	// on every engine, and no verdict is read or written.
	var agentKey []byte
	var verdict *agentVerdict
	if b.asksAgentBind(addr, p) {
		verdict = newAgentVerdict(p.StateDir, addr.Host, p.Egress.SocketDir)
	}
	if verdict != nil && !verdict.refused(time.Now()) {
		agentKey = make([]byte, sshagent.ProbeKeyLen)
		_, _ = rand.Read(agentKey)
		if b.Keep {
			q := *p
			q.SSHAgent.Socket = sockdir.KeptAgentSocket(p.Egress.SocketDir, p.Proxy.Session)
			p = &q
		}
	}
	svc, err := b.startServices(p, agentKey)
	if err != nil {
		return 0, err
	}
	// A kept run stops them as soon as its exec's output ended (runKept).
	stopServices := sync.OnceFunc(svc.Stop)
	defer stopServices()
	if p, err = rootlessPlan(p, info, addr); err != nil {
		return 0, err
	}
	// Before the first request that changes anything on the engine: every request
	// waits for the verdict and is refused with it, and the run stops here with it.
	if err := engineVerdict(says); err != nil {
		return 0, err
	}
	opts, pr, err := b.engineSide(ctx, e, addr, p)
	if err != nil {
		return 0, err
	}
	if agentKey != nil {
		bindAgent(p, &opts, agentKey) // after the services: they may have moved the socket
	}
	if !addr.Local() && opts.HomeVolume == "" {
		opts.HomeVolume = "devsandbox-" + p.Project.Name + "-home"
	}
	// Anchors are sub-paths of volumes on an engine with API 1.45 or newer, else the
	// directories pinned below, or refused (anchorvol.go).
	subpath := false
	// An anchor left unpinned is refused (translate), never bound by its path.
	opts.Anchors = map[string]string{}
	if anchored {
		api, ok := b.head.negotiated()
		if !ok {
			if api, err = engineAPI(ctx, e); err != nil {
				st := engineDown(addr, err)
				return 0, fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
			}
		}
		if err := addr.RefuseAnchors(p, api); err != nil {
			return 0, err
		}
		subpath = !apiBefore(api, SubpathAPI)
		opts.Subpath = subpath
	}
	// The sources as this run found them: pinned for a local engine, their
	// identities noted for another (pin.Record); asked when the run fails.
	var pins *pin.Set
	if addr.Local() {
		// The engine binds by path: pin each source, and the init checks that the
		// engine bound the file pinned (guarantee 12; see package pin). A remote
		// engine's files are not this host's to open.
		if err := isolator.PrepareHost(p); err != nil {
			return 0, err
		}
		if pins, err = pin.Plan(p); err != nil {
			return 0, err
		}
		// Held until the run ends: the engine mounts the anchors through them
		// (anchorMount) when it starts the container.
		defer pins.Close()
		var index []int
		p, index = pins.Apply()
		// A file the sandbox can swap goes as the content of the one pinned.
		if p, err = viaContent(p, func(i int) (*pin.Source, func(), error) { return pins.Sources[index[i]], func() {}, nil }, false); err != nil {
			return 0, err
		}
		opts.BootID = pin.BootID()
		if !subpath {
			for src, s := range pins.Anchors() {
				opts.Anchors[src] = s.ProcPath()
			}
		}
	} else {
		if err := isolator.CheckDestinations(p); err != nil {
			return 0, err
		}
		pins = pin.Record(p)
		// The engine pins nothing: a file the sandbox can swap goes as content, and
		// so does a read-only directory unless the engine mounts it as a sub-path.
		if p, err = viaContent(p, remoteSources(p), !subpath); err != nil {
			return 0, err
		}
		// What is read now is what would cross: over plain TCP to another machine,
		// a credential in it is refused before any of it does (what was asked for
		// so far carries nothing of the files: pings, inspections by name, the mask
		// volume's empty file, a kept container's endpoint volume).
		if err := addr.RefuseClearFiles(p); err != nil {
			return 0, err
		}
	}
	warnClear()
	l, err := layout(p, opts)
	if err != nil {
		return 0, err
	}
	// The anchors' volumes are made (usually: found as they are) while the image
	// and the content volumes are asked for.
	var roots rootsAhead
	if opts.Subpath {
		roots = makeRootsAhead(ctx, e, p, l)
		defer roots.wait()
	}
	// Generated files are bound from the engine's volumes, by the paths the engine
	// reports; those volumes (usually there: only an inspect each) are asked for
	// while the image is, whose files the layout's content sources do not change.
	var sources *future[map[string]string]
	if len(l.Contents) > 0 || len(l.Volatile) > 0 {
		base, l0 := opts.Image, l
		sources = fetch(func() (map[string]string, error) { return contentSources(ctx, e, p, base, l0) })
		defer func() { _, _ = sources.get() }()
	}
	// Containers run the image derived from docker.image, by its ID.
	// An image a running container was made from is on the engine: it cannot be
	// removed while the container runs.
	proven := func(id string) bool {
		if kept == nil {
			return false
		}
		in, err := kept.get()
		return err == nil && in.ContainerJSONBase != nil && in.Image == id && in.State != nil && in.State.Running
	}
	image, imageEnv, err := b.derivedImage(ctx, e, addr, p, opts.Image, pr, l.ImageFiles, proven)
	if sources != nil {
		var serr error
		if opts.ContentSources, serr = sources.get(); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return 0, err
	}
	if sources != nil {
		if l, err = layout(p, opts); err != nil {
			return 0, err
		}
	}
	opts.Image, opts.ImageEnv = image, imageEnv
	if err := l.Prepare(); err != nil {
		return 0, err
	}
	l.MakeMountPoints()
	if !addr.Local() {
		// PrepareHost records it for a local engine; for `sandboxes list` and `prune`.
		isolator.RecordProject(p)
	}
	// --debug's timings say how the image was found or made (imageWay).
	b.phase("image " + b.imageWay)
	spec, err := translate(p, l, opts)
	if err != nil {
		return 0, err
	}
	if spec.AgentBind != "" {
		spec.agentVerdict = verdict
	}
	if err := l.WriteFiles(); err != nil {
		return 0, err
	}
	hello, err := container.Hello(p, stdio)
	if err != nil {
		return 0, err
	}
	if spec.Exec != nil && p.Egress.NeedsProxy() && hello.Nonce == "" {
		// A kept session's init reports with it the proxy connections the keeper
		// refused that may have been the session's (refusalLog).
		hello.Nonce = container.NewNonce()
	}
	b.phase("prepare")
	if opts.HomeVolume != "" {
		if err := b.ensureHomeVolume(ctx, e, p, opts); err != nil {
			return 0, err
		}
	}
	if err := roots.made(ctx, e, p, spec.AnchorRoots); err != nil {
		return 0, err
	}
	if allowlistNames(p.Egress) && !b.hostNetwork(addr) {
		// The planner checked the allowed names against this machine's addresses; the
		// firewall runs on the engine's host, which may be another (a remote engine,
		// one behind a relayed socket) or another network namespace (rootless).
		host, err := engineHostAddresses(ctx, e, addr, p, spec.Config.Image, spec.ImageEnv, spec.Config.Labels)
		if err != nil {
			return 0, err
		}
		if err := allowlistOpensEngineHost(p.Egress, host); err != nil {
			return 0, err
		}
		spec.engineHostAhead = func() ([]string, error) { return host, nil }
		b.phase("engine host")
	}
	launched = true
	var code int
	if spec.Exec != nil {
		code, err = b.runKept(ctx, e, addr, p, spec, pr, hello, stdio, kept, stopServices)
	} else {
		code, err = b.runOnce(ctx, e, addr, p, spec, pr, hello, stdio)
	}
	if err != nil && ctx.Err() == nil {
		// Both fail only before the command runs (a command that ran gives its
		// status): the engine could not mount a source, or the init refused what it
		// found. Asked before the deferred clean-up.
		err = pins.Gone("the docker engine", err)
	}
	return code, err
}

// prepareFailed explains a run that failed before its container was created: when
// the engine does not answer now, that is the failure (an unavailable isolator, with
// the address, its origin and the fix), not the request that met it first — on a new
// project, making a file mask's volume. The probe runs only now, off the hot path, as
// bwrap's setupFailed. A run cancelled meanwhile keeps its error: an unavailable
// isolator lets mode auto run the command unsandboxed.
func (b *Isolator) prepareFailed(ctx context.Context, err error) error {
	if errors.Is(err, isolator.ErrUnavailable) || ctx.Err() != nil {
		return err
	}
	if st := b.Check(ctx); st.State != isolator.Active {
		return fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	return err
}

// aheadVolumes names the engine's volumes p's run will likely inspect: the mask
// volume, and the content and volatile volumes of p's layout drawn with the options
// known as the run starts (the run draws it again with the engine's answers; a name
// missed or extra here costs a round trip, nothing else).
func aheadVolumes(p *isolator.Plan, o Options, addr Address) []string {
	var names []string
	if needsMask(p) {
		names = append(names, maskVolume)
	}
	opts := engineOptions(p, o)
	if !addr.Local() && opts.HomeVolume == "" {
		opts.HomeVolume = "devsandbox-" + p.Project.Name + "-home"
	}
	l, err := layout(p, opts)
	if err != nil {
		return names
	}
	for _, f := range l.Contents {
		names = append(names, contentVolume(p.Project.Name, f.Content, p.User.ContainerRoot))
	}
	for _, f := range l.Volatile {
		names = append(names, volatileVolume(p.Project.Name, f.Path))
	}
	return names
}

// engineSide returns the options of p's run and the programs it ships. Nothing of
// devsandbox's own is bound from this host (DESIGN guarantee 11): the init is in the
// derived image, the egress services run in the engine.
func (b *Isolator) engineSide(ctx context.Context, e Engine, addr Address, p *isolator.Plan) (Options, programs, error) {
	opts := engineOptions(p, b.Options)
	arch := func() (string, error) {
		if runtime.GOOS == "linux" && addr.Local() {
			return runtime.GOARCH, nil
		}
		v, err := e.ServerVersion(ctx)
		if err != nil {
			st := engineDown(addr, err)
			return "", fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
		}
		return v.Arch, nil
	}
	ship := b.ship
	if ship == nil {
		ship = shipped
	}
	pr, err := ship(p, arch, needsCompanion(p))
	if err != nil {
		return opts, pr, err
	}
	if needsMask(p) {
		opts.MaskSource, err = b.maskSource(ctx, e, volumeLock(p), opts.Image)
	}
	return opts, pr, err
}

// engineOptions are o as a run uses them for p: devsandbox's files in the image
// derived from docker.image, the egress endpoints on an engine-side volume, file
// masks bound from the engine's mask volume (Run sets where its file is; the default
// is where a local engine keeps it).
func engineOptions(p *isolator.Plan, o Options) Options {
	o.Shipped = true
	if o.MaskSource == "" {
		o.MaskSource = "/var/lib/docker/volumes/" + maskVolume + "/_data/" + maskFile
	}
	if needsCompanion(p) {
		o.EndpointVolume = endpointVolume(p, o.Keep)
	}
	o.AgentSocket = agentSocket(p)
	return o
}

// startServices starts the run's host services (tests replace them): the agent's
// relay only with agentKey, which it answers probes with (agent.go).
func (b *Isolator) startServices(p *isolator.Plan, agentKey []byte) (*hostsvc.Services, error) {
	if b.services != nil {
		return b.services(p)
	}
	return hostsvc.Start(p, hostsvc.Options{Warn: b.Warn, Phase: b.Phase, EngineEgress: true, EngineAgent: agentKey == nil, AgentKey: agentKey})
}

// runOnce creates a container for this run only; the engine removes it when it stops.
func (b *Isolator) runOnce(ctx context.Context, e Engine, addr Address, p *isolator.Plan, spec *Spec, pr programs, hello *wire.Hello, stdio isolator.Stdio) (int, error) {
	comp := b.goCompanion(ctx, e, addr, p, pr, spec)
	defer comp.stop()
	if err := comp.failed(); err != nil {
		return 0, err
	}
	id, err := b.createOnce(ctx, e, addr, p, spec)
	if err != nil {
		return 0, err
	}
	started := false
	defer func() {
		if !started {
			remove(ctx, e, id)
		}
	}()
	b.phase("create")
	hj, err := e.ContainerAttach(ctx, id, dockercontainer.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return 0, fmt.Errorf("attaching to the container: %w", err)
	}
	defer hj.Close()
	// Until the session starts, the end of ctx ends the init's stream: the init
	// takes the command down, as it does when this process dies. From then on, the
	// command gets SIGTERM first (stopOnCancel).
	stopNow := context.AfterFunc(ctx, hj.Close)
	defer stopNow()
	// The wait outlives ctx, by the stop grace and StopBound: when ctx ends, the
	// command is stopped (above) and the engine removes the container, and Run
	// returns only once it has; after the bound, the container is removed by force.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case <-returned:
			return
		case <-ctx.Done():
		}
		select {
		case <-returned:
		case <-time.After(b.stopGrace() + StopBound):
			b.warn("the container did not stop within %s of the run's end; removing it", b.stopGrace()+StopBound)
			remove(ctx, e, id)
			wcancel()
		}
	}()
	waitc, werrc := e.ContainerWait(wctx, id, dockercontainer.WaitConditionRemoved)
	start := func() error {
		if err := e.ContainerStart(ctx, id, dockercontainer.StartOptions{}); err != nil {
			return isolator.WithGuess(fmt.Errorf("%w: the docker engine could not start the container: %w; the command did not run", isolator.ErrProtection, err),
				anchorHint(spec)+". `devsandbox --dry-run` shows the container")
		}
		started = true
		b.phase("start")
		return nil
	}
	// The init waits for the session's hello before it checks the rules and starts
	// the command: start the container while the companion starts, apply the rules,
	// and say hello only once the proxy and ports are ready (the command may reach
	// the proxy and be reached on its ports as soon as it starts).
	if err := start(); err != nil {
		return 0, err
	}
	var ag *agentStream
	var lazy *lazyAgent
	if spec.AgentBind != "" {
		// The init asks for the exec only if the bound socket fails its proof.
		lazy = &lazyAgent{b: b, ctx: ctx, e: e, p: p, id: id, fail: func() { hj.Close() }}
	} else if ag, err = b.startAgentNow(ctx, e, p, id); err != nil {
		remove(ctx, e, id)
		return 0, err
	}
	defer ag.stop()
	defer lazy.stop()
	if p.Egress.NeedsFirewall() {
		if err := b.applyFirewall(ctx, e, p, spec, id); err != nil {
			remove(ctx, e, id)
			return 0, err
		}
		b.phase("firewall")
	}
	if err := comp.ready(ctx); err != nil {
		remove(ctx, e, id)
		return 0, err
	}
	if err := ag.waitReady(ctx); err != nil {
		remove(ctx, e, id)
		return 0, err
	}
	if !stopNow() {
		remove(ctx, e, id)
		return 0, fmt.Errorf("the sandbox was stopped before the command ran: %w", context.Cause(ctx))
	}
	sess, err := b.attach(hj.Conn, hj.Reader, p, spec.Layout.Masks, stdio, hello, lazy)
	if err != nil {
		remove(ctx, e, id)
		return 0, err
	}
	defer sess.Close()
	b.Freezer.Set(sess.Freeze(&container.Pauser{
		Pause:   func(ctx context.Context) error { return e.ContainerPause(ctx, id) },
		Unpause: func(ctx context.Context) error { return e.ContainerUnpause(ctx, id) },
	}, stdio.Err, hj.Close))
	defer b.Freezer.End()
	defer b.stopOnCancel(ctx, sess, hj.Close)()
	defer goSweep(ctx, e, p, id, b.mark, true)()
	code := 125
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case r := <-waitc:
			code = int(r.StatusCode)
			if r.Error != nil && r.Error.Message != "" {
				b.warn("waiting for the container: %s", r.Error.Message)
			}
		case err := <-werrc:
			b.warn("waiting for the container: %v", err)
		}
	}()
	select {
	case <-sess.report.Seen():
		lazy.seen(sess.report)
		b.phase("sandbox ready")
	case <-sess.outDone:
	case <-exited:
	}
	sess.wait(exited, 2*time.Second)
	<-exited
	b.engineLost(ctx, addr, code)
	return sess.Result(code)
}

// StopBound is how long a run whose context ended waits, past the stop grace, for
// its container to stop and be removed before it removes it by force.
const StopBound = 15 * time.Second

func (b *Isolator) stopGrace() time.Duration {
	if b.StopGrace > 0 {
		return b.StopGrace
	}
	return container.DefaultStopGrace
}

// stopOnCancel makes the end of ctx stop the session's command: SIGTERM, then end
// after the stop grace (container.Session.StopOnCancel). The caller has stopped
// the stream's immediate end (stopNow) before the session's hello, so a ctx that
// ends from then on is the session's to handle. The returned function releases it.
func (b *Isolator) stopOnCancel(ctx context.Context, sess *attached, end func()) func() {
	grace := b.stopGrace()
	return sess.StopOnCancel(ctx, grace, end, func() {
		b.warn("the command did not exit within %s of SIGTERM after the run was cancelled; ending its session", grace)
	})
}

// createOnce creates the run's container.
func (b *Isolator) createOnce(ctx context.Context, e Engine, addr Address, p *isolator.Plan, spec *Spec) (string, error) {
	name := "devsandbox-" + p.Project.Name + "-" + container.RandomSuffix()
	created, err := createNamed(ctx, e, spec.Config, spec.Host, spec.Network, name)
	if err != nil && agentUnseen(err, spec) {
		spec.agentVerdict.note()
		dropAgentBind(spec) // the stream instead (agent.go)
		created, err = createNamed(ctx, e, spec.Config, spec.Host, spec.Network, name)
	}
	if err != nil {
		return "", b.createFailed(ctx, e, addr, spec, err)
	}
	if err := b.limitsDiscarded(created.Warnings); err != nil {
		remove(ctx, e, created.ID)
		return "", err
	}
	return created.ID, nil
}

// anchorHint explains a start that failed for a container with anchors. Pinned ones
// (Spec.Anchored): an engine in another mount namespace than this process (a
// dockerd in a namespace or a VM of its own, reached through a Unix socket) cannot
// mount /proc/PID/fd/N ("invalid argument"), and is refused rather than given a path.
// Sub-paths (Spec.AnchorRoots): the engine refuses one that a symlink leads out of
// ("path concatenation escapes the base directory"), which is what a concurrent
// session that swapped the directory leaves.
func anchorHint(spec *Spec) string {
	switch {
	case spec.Anchored:
		return " (if the engine could not mount a volume with a device /proc/.../fd/N: it runs in another mount namespace than this host's, like a rootless dockerd, and its API is older than " + SubpathAPI + " (Docker 26), so it can neither bind the directories devsandbox pinned where a sandbox can write them (a repository's .git and hooks, a writable_dirs entry, a directory holding a masked path) nor mount them as sub-paths; upgrade the engine to Docker 26 or newer, use an engine that shares this host's mounts, or `--isolator bwrap`)"
	case len(spec.AnchorRoots) > 0:
		return " (if the engine could not mount a sub-path of a volume " + spec.AnchorRoots[0].Volume + ": a directory a sandbox can write in (below " + spec.AnchorRoots[0].Dir + ") was replaced by a symlink after devsandbox checked it, and the engine refuses to follow it; nothing was mounted through it. A sandboxed session of this project may have done that: look for a symlink where the directory was)"
	}
	return ""
}

// createBound bounds the wait for a container's create once the run has ended
// (createNamed): the end of the run does not cut the create short, an engine that
// does not answer within it then does. A var for tests.
var createBound = 30 * time.Second

// createNamed creates a container under a name of this run's own (a random suffix).
// The end of ctx does not cut the create short: an engine that has the request makes
// the container all the same, possibly after a removal by name found nothing, and a
// container made then names volumes the run may have removed since, which the engine
// creates again itself (unlabelled: no sweep or prune finds them; one was left by a
// run cancelled in its start). While ctx lives the create takes what the engine
// takes, as any other request; once ctx ended the run waits for the engine's answer
// at most createBound more, and removes a container made after ctx ended; past the
// bound, as an engine that does not answer, it is removed by name.
func createNamed(ctx context.Context, e Engine, cfg *dockercontainer.Config, hc *dockercontainer.HostConfig, nc *network.NetworkingConfig, name string) (dockercontainer.CreateResponse, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	bound := createBound
	// On a goroutine of its own once ctx ended; it returns when the create did.
	stop := context.AfterFunc(ctx, func() {
		select {
		case <-cctx.Done():
		case <-time.After(bound):
			cancel()
		}
	})
	defer stop()
	created, err := e.ContainerCreate(cctx, cfg, hc, nc, nil, name)
	switch {
	case err != nil && cctx.Err() != nil:
		// Cut short past the bound, which only runs once ctx ended.
		remove(ctx, e, name)
		return created, fmt.Errorf("creating the container %s: %w", name, context.Cause(ctx))
	case err == nil && ctx.Err() != nil:
		remove(ctx, e, created.ID)
		return dockercontainer.CreateResponse{}, fmt.Errorf("creating the container %s: %w", name, context.Cause(ctx))
	}
	return created, err
}

// remove removes container id with its anonymous volumes, even when ctx is done.
func remove(ctx context.Context, e Engine, id string) {
	_ = e.ContainerRemove(context.WithoutCancel(ctx), id, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
}

// limitsDiscarded turns the engine's warnings about limits it could not apply
// ("... Limitation discarded.", "PIDs limit discarded.") into a refusal: a requested
// protection that cannot be applied stops the run. Other warnings are passed on.
func (b *Isolator) limitsDiscarded(warnings []string) error {
	var discarded []string
	for _, w := range warnings {
		if strings.Contains(w, "discarded") {
			discarded = append(discarded, w)
			continue
		}
		b.warn("the docker engine: %s", w)
	}
	if len(discarded) > 0 {
		return fmt.Errorf("%w: the docker engine cannot apply the sandbox's limits (limits.pids, limits.memory, limits.cpus): %s; the command did not run. Enable the cgroup controllers on the engine's host, or run without the limit: remove limits.memory and limits.cpus from the config, and set limits.pids to 0 (--pids=0; it is 4096 unless set)", isolator.ErrProtection, strings.Join(discarded, " "))
	}
	return nil
}

// createFailed explains a failed ContainerCreate.
func (b *Isolator) createFailed(ctx context.Context, e Engine, addr Address, spec *Spec, err error) error {
	if cerrdefs.IsNotFound(err) {
		if _, ierr := e.ImageInspect(ctx, spec.Config.Image); ierr != nil {
			return fmt.Errorf("%w: the image %s is not on the docker engine at %s; build it with `devsandbox image build` (or pull it, or set docker.image / --image)", isolator.ErrUnavailable, spec.Config.Image, addr.Host)
		}
	}
	if cerrdefs.IsConflict(err) {
		return fmt.Errorf("creating the container: %w", err)
	}
	if err := b.maskIncomplete(ctx, e, err, spec.Layout); err != nil {
		return err
	}
	if err := unseen(err, addr, spec.Layout); err != nil {
		return err
	}
	st := engineDown(addr, err)
	if cerrdefs.IsUnavailable(err) || client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	return fmt.Errorf("%w: the docker engine refused the container: %w; the command did not run", isolator.ErrProtection, err)
}
