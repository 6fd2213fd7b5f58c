package krun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/imageuse"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Run implements isolator.Isolator. It keeps p's disk reserve (diskguard.Run).
func (b *Isolator) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	return diskguard.Run(ctx, p, func(ctx context.Context) (int, error) { return b.run(ctx, p, stdio) })
}

func (b *Isolator) run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	if b.Settings.KeepContainer {
		return 0, helper.ErrKeep
	}
	h := b.hostAccess()
	opts := b.options(h)
	if opts.VM() {
		// Asked before podman, whose own answer ("stat /dev/kvm: no such file or
		// directory") names neither the setting nor the fix.
		if err := h.KVM(); err != nil {
			return 0, fmt.Errorf("%w: krun.runtime %q boots a microVM, which needs /dev/kvm: %w; %s; the command did not run", isolator.ErrUnavailable, opts.Runtime, err, kvmFix)
		}
	}
	// Before anything of the project's is made or used: prune must not remove its
	// sandbox home and state meanwhile.
	mark, release, err := h.MarkRun(ctx, p.StateDir, stdio.Err, b.Signals)
	if err != nil {
		return 0, fmt.Errorf("marking the project's state directory %s in use: %w; the command did not run", p.StateDir, err)
	}
	defer release()
	svc, err := b.startServices(p, stdio.Err)
	if err != nil {
		return 0, err
	}
	defer svc.Stop()
	// podman binds by path: pin each source, and the init checks that what was
	// bound is the file pinned (guarantee 12; see package pin).
	p, bootID, pins, err := h.Pin(p)
	if err != nil {
		return 0, err
	}
	// gone explains a failure to mount the sources or the init's refusal of what
	// was mounted when a source went away meanwhile; asked before the deferred
	// clean-up removes the run's own directories.
	gone := func(err error) error { return pins.Gone("podman", err) }
	opts.BootID = bootID
	l, err := layout(p, opts)
	if err != nil {
		return 0, err
	}
	if err := l.Prepare(); err != nil {
		return 0, err
	}
	// The runtime runs as root of the container's user namespace (keep-id: your
	// first subordinate uid on the host): a mount point it made in the sandbox home
	// would be that uid's, which you cannot remove.
	l.MakeMountPoints()
	// Checked now, with the anchors' placeholders; rendered again once they are
	// staged (below).
	if _, err := translate(p, l, opts); err != nil {
		return 0, err
	}
	if err := l.WriteFiles(); err != nil {
		return 0, err
	}
	hello, err := container.Hello(p, stdio)
	if err != nil {
		return 0, err
	}
	b.phase("prepare")
	b.planned = p
	e, err := b.connect(ctx, h, wantedLimits(opts, p.Limits.Pids))
	if err != nil {
		return 0, err
	}
	b.phase("connect")
	// Every rlimit the spec does not set otherwise is the service's own, which it can
	// give: nothing is left for a containers.conf's default_ulimits to add (Inherited).
	if opts.Inherited, err = h.ServiceRlimits(b.socketName()); err != nil || len(opts.Inherited) == 0 {
		if err == nil {
			err = errors.New("it shows none")
		}
		return 0, fmt.Errorf("%w: reading the rlimits of podman's service on %s, which the container is given so that a containers.conf's default_ulimits cannot ask it one it cannot grant: %w; the command did not run", isolator.ErrProtection, b.socketName(), err)
	}
	// The image's ENV goes to the command alone, through the init (imageEnv): the
	// spec names its variables. The last run's record for the image (imageenv.go)
	// spares the inspect; the create's inspect below checks it.
	stateRoot := filepath.Dir(p.StateDir)
	known, env, cached := loadImageEnv(stateRoot, opts.Image)
	if !cached {
		if known, env, err = e.ImageEnv(opts.Image); err != nil {
			return 0, fmt.Errorf("%w; the command did not run", err)
		}
		b.phase("image env")
	}
	opts.ImageEnv = env
	// Meanwhile, the containers of runs that died (leftovers.go).
	swept := b.sweepDeadRuns(e)
	defer swept()
	// Only now: podman's namespaces exist once its service runs.
	staged, unstage, err := h.StageAnchors(podmanRuntimeDir(b.Settings.RuntimeDir, b.Settings.UID), opts.Binaries.Nsenter, anchorsOf(p))
	if err != nil {
		return 0, gone(err)
	}
	defer unstage()
	opts.Anchors = staged
	var (
		s      *Spec
		id     string
		remove func()
	)
	for try := 1; ; try++ {
		var imageID string
		var err error
		s, id, imageID, remove, err = b.createChecked(ctx, h, e, p, l, opts, mark, gone)
		if remove != nil {
			defer remove()
		}
		if err != nil {
			return 0, err
		}
		if sameImage(imageID, known) {
			if !cached || try > 1 {
				// A record that cannot be written costs the next run an inspect, never this run.
				_ = saveImageEnv(stateRoot, opts.Image, imageID, opts.ImageEnv)
			}
			// For `sandboxes prune`, which keeps what runs used within its --days
			// (package imageuse). A record that cannot be written costs the image that
			// protection, never the run: prune still keeps an image a container uses.
			_ = imageuse.Record(stateRoot, imageuse.Podman, imageID, time.Now())
			break
		}
		// podman made it from another image than the one whose ENV the spec names
		// (the reference was retagged, or the record is of another storage's image):
		// not started, so nothing of it ran; made again with that image's ENV, read
		// by its ID.
		remove()
		if try == imageTries {
			return 0, fmt.Errorf("%w: %w: podman made the container from image %s, not %s whose ENV the run read, %d times (is %s being retagged?); the command did not run", isolator.ErrProtection, errImageMoving, imageID, known, try, opts.Image)
		}
		if known, opts.ImageEnv, err = e.ImageEnv(imageID); err != nil {
			return 0, fmt.Errorf("%w; the command did not run", err)
		}
	}
	b.phase("create")
	// From here on the container exists: it goes away on every path out. When ctx
	// ends before the session started, or because devsandbox is gone
	// (handoff.ErrCallerGone), it goes at once; once the session runs, the command
	// is stopped first (stopOnCancel), and the container goes only if it has not
	// ended within the stop grace and stopBound after.
	done := make(chan struct{})
	defer close(done)
	var sessionOn atomic.Bool
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		if sessionOn.Load() && !errors.Is(context.Cause(ctx), handoff.ErrCallerGone) {
			select {
			case <-done:
				return
			case <-time.After(b.stopGrace() + stopBound):
				b.warn("the container did not stop within %s of the run's end; removing it", b.stopGrace()+stopBound)
			}
		}
		remove()
	}()

	inR, inW := io.Pipe()
	report := container.NewReport(stdio, hello)
	fo := tty.FilterOptions{AllowClipboard: p.TerminalClipboard}
	out, tidy := container.TerminalOut(stdio, hello, fo)
	out, flush := container.PlainOut(out, report, fo)
	ready := make(chan bool, 1)
	attached := make(chan error, 1)
	go func() {
		err := e.Attach(id, inR, out, report, ready)
		_ = report.Flush() // the output ended: a stop waiting for an answer gets none (container.Session.Freeze)
		flush()
		attached <- err
	}()
	select {
	case <-ready:
	case err := <-attached:
		remove()
		// podman prepares the container for the attach: the runtime mounts then.
		return 0, gone(fmt.Errorf("%w: attaching to the container: %w; the command did not run", isolator.ErrProtection, err))
	}
	start := func() error {
		if err := e.Start(id); err != nil {
			remove()
			return gone(isolator.WithGuess(fmt.Errorf("%w: podman could not start the container: %w; the command did not run", isolator.ErrProtection, err),
				". `devsandbox doctor` checks podman and the runtime "+s.Gen.OCIRuntime))
		}
		b.phase("start")
		return nil
	}
	if len(s.Firewall) > 0 {
		// The init waits for the hello frame before it verifies the rules and runs
		// the command: start, apply the rules, then send it.
		if err := start(); err != nil {
			return 0, err
		}
		if err := b.firewall(ctx, e, id, s, p); err != nil {
			remove()
			return 0, err
		}
		b.phase("egress rules")
	}
	// The pipe to the attach connection is drained once the container starts; the
	// hello waits there until then.
	sess, err := container.StartSession(container.NewStream(inW), stdio, hello, report,
		container.SessionOptions{Signals: b.Signals, AsyncHello: true, Engine: "podman", OOMMessage: p.Limits.OOMMessage(), Masks: s.Layout.Masks, Tidy: tidy})
	if err != nil {
		remove()
		return 0, err
	}
	defer sess.Close()
	b.Freezer.Set(sess.Freeze(&container.Pauser{
		Pause:   func(ctx context.Context) error { return e.Pause(ctx, id) },
		Unpause: func(ctx context.Context) error { return e.Unpause(ctx, id) },
	}, stdio.Err, func() { _ = inW.Close() }))
	defer b.Freezer.End()
	// The end of ctx from here on: SIGTERM to the command, after the stop grace the
	// end of the init's stream (the init kills what is left and exits).
	grace := b.stopGrace()
	sessionOn.Store(true)
	defer sess.StopOnCancel(ctx, grace, func() { _ = inW.Close() }, func() {
		b.warn("the command did not exit within %s of SIGTERM after the run was cancelled; ending its session", grace)
	})()
	if len(s.Firewall) == 0 {
		if err := start(); err != nil {
			return 0, err
		}
	}
	go func() {
		<-report.Seen()
		b.phase("sandbox ready")
	}()
	code := 125
	exited := make(chan struct{})
	var waitErr error // set before exited closes
	go func() {
		defer close(exited)
		c, err := e.Wait(id)
		if err != nil {
			waitErr = err
			select {
			case <-done: // the run is over and removed the container
			default:
				if ctx.Err() == nil {
					b.warn("waiting for the container: %v", err)
				}
			}
			return
		}
		code = c
		b.phase("exited")
	}()
	// A wait that failed once ctx ended is the removal's doing (podman answers "no
	// such container" as it goes, before the removal returns): the run reports the
	// cancel, not the 125 it has in place of a status, whichever of exited and
	// removed it sees first.
	cancelled := func() error {
		if waitErr == nil || ctx.Err() == nil {
			return nil
		}
		_ = inW.Close()
		return fmt.Errorf("%w: the run ended (%w) and podman reported no exit status (%w); the container is removed", isolator.ErrProtection, context.Cause(ctx), waitErr)
	}
	select {
	case err := <-attached:
		b.phase("output ended")
		if err != nil && ctx.Err() == nil {
			b.warn("the container's output: %v", err)
		}
		// The output ends as the container exits; podman reports the exit after that,
		// seconds after on a loaded host. The status is the command's, not a guess:
		// wait for it.
		select {
		case <-exited:
			if err := cancelled(); err != nil {
				return 0, err
			}
		case <-time.After(b.exitReportWait()):
			// Not ErrUnavailable: the command has run, and sandbox.mode = auto must
			// not run it a second time unsandboxed.
			return 0, fmt.Errorf("podman reported no exit status within %s of the container's output ending, so the command ran but its status is unknown; `devsandbox doctor` checks podman", b.exitReportWait())
		case <-removed:
			return 0, fmt.Errorf("%w: the run ended (%w); the container was removed", isolator.ErrProtection, context.Cause(ctx))
		}
	case <-exited:
		if err := cancelled(); err != nil {
			return 0, err
		}
		select {
		case <-attached:
		case <-time.After(2 * time.Second):
		}
	case <-removed:
		return 0, fmt.Errorf("%w: the run ended (%w); the container was removed", isolator.ErrProtection, context.Cause(ctx))
	}
	_ = inW.Close()
	remove()
	b.phase("removed")
	code, err = sess.Result(code)
	return code, gone(err)
}

// removeContainer removes the run's container, trying again when podman fails: a
// forced removal that races with the container's own exit fails ("container not
// running") after the kill, and leaves the container exited.
func (b *Isolator) removeContainer(e engine, id string) {
	var err error
	for i := range removeTries {
		if err = e.Remove(id); err == nil || i == removeTries-1 {
			break
		}
		time.Sleep(time.Duration(i+1) * 50 * time.Millisecond) // a back-off, not a wait for an event
	}
	if err == nil {
		return
	}
	b.warn("podman could not remove the container %s: %v; `podman rm %s` removes it, as does the next krun run once this one ended, or `devsandbox sandboxes prune` a minute after it exited", id, err, id)
}

// removeTries is how often a run tries to remove its container.
const removeTries = 4

// stopBound is how long a run whose context ended waits, past the stop grace, for
// its container to stop before it removes it.
const stopBound = 15 * time.Second

func (b *Isolator) stopGrace() time.Duration {
	if b.StopGrace > 0 {
		return b.StopGrace
	}
	return container.DefaultStopGrace
}

// exitReportWait bounds the wait for the container's exit status once its output
// ended: long enough for a loaded host, short of hanging on a service that died.
const exitReportWait = 2 * time.Minute

func (b *Isolator) exitReportWait() time.Duration {
	if b.exitWait > 0 {
		return b.exitWait
	}
	return exitReportWait
}

// startServices starts the run's host services (tests replace them); the session
// proxy's stderr is stderr.
func (b *Isolator) startServices(p *isolator.Plan, stderr io.Writer) (*hostsvc.Services, error) {
	if b.services != nil {
		return b.services(p)
	}
	return hostsvc.Start(p, hostsvc.Options{Warn: b.Warn, Phase: b.Phase, Stderr: stderr})
}

// firewall applies the egress rules in the running container's network namespace.
func (b *Isolator) firewall(ctx context.Context, e engine, id string, s *Spec, p *isolator.Plan) error {
	pid, err := e.Pid(id)
	if err != nil {
		return fmt.Errorf("%w: %w: finding the container's process: %w; the command did not run", isolator.ErrProtection, egress.ErrFirewall, err)
	}
	ns := b.netns
	if ns == nil {
		ns = hostNetns{}
	}
	return applyFirewall(ctx, ns, pid, s, p, b.options(nil).Binaries)
}

// socketName is the API socket of the run: krun.podman_socket, or the service
// devsandbox runs for the runtime and the podman variables and HOME of its environment
// (the service inherits them: see serviceKey).
func (b *Isolator) socketName() string {
	st := b.Settings
	return socketPath(st.Socket, st.RuntimeDir, st.UID, st.Runtime, serviceKey(os.Environ(), accountHome()))
}

// limitsIgnored turns podman's warnings about resource limits it does not apply
// (rootless containers on cgroup v1 have no cgroups: "Resource limits are not
// supported and ignored on cgroups V1 rootless systems") into a refusal; other
// warnings are passed on.
func (b *Isolator) limitsIgnored(warnings []string, p *isolator.Plan) error {
	for _, w := range warnings {
		if strings.Contains(strings.ToLower(w), "limit") && (p.Limits.Memory > 0 || p.Limits.CPUs > 0) {
			var keys []string
			if p.Limits.Memory > 0 {
				keys = append(keys, "limits.memory (--memory)")
			}
			if p.Limits.CPUs > 0 {
				keys = append(keys, "limits.cpus (--cpus)")
			}
			return fmt.Errorf("%w: %s cannot be enforced with krun.runtime %q here: podman says %q; the command did not run. With runc they need cgroup v2 with the controllers delegated to your user (a microVM runtime enforces them as its size); run without them, or use --isolator=docker", isolator.ErrProtection, strings.Join(keys, " and "), b.Settings.Runtime, w)
		}
		b.warn("podman: %s", w)
	}
	return nil
}

// imageTries is how many times Run creates the container when podman made it from
// another image than the one whose ENV the spec names (imageenv.go).
const imageTries = 3

// createChecked renders the spec with opts, creates the container (not started)
// and checks the runtime podman gave it. It returns the ID of the image podman made
// it from, and remove, which removes the container once however often it is
// called, whenever the container was created (on an error too).
func (b *Isolator) createChecked(ctx context.Context, h Host, e engine, p *isolator.Plan, l *container.Layout, opts Options, mark string, gone func(error) error) (s *Spec, id, imageID string, remove func(), err error) {
	s, err = translate(p, l, opts)
	if err != nil {
		return nil, "", "", nil, err
	}
	s.Gen.Name = "devsandbox-" + p.Project.Name + "-" + container.RandomSuffix()
	if mark != "" {
		s.Gen.Labels[LabelRunMark] = mark
		s.Gen.Labels[LabelRunWhere] = runmark.Where()
	}
	id, warnings, err := b.create(ctx, h, e, s.Gen)
	if err != nil {
		if errors.Is(err, isolator.ErrUnavailable) {
			return nil, "", "", nil, err
		}
		return nil, "", "", nil, gone(isolator.WithGuess(fmt.Errorf("%w: podman refused the container: %w; the command did not run", isolator.ErrProtection, err),
			". `devsandbox --dry-run` shows it, `devsandbox doctor` checks podman"))
	}
	// podman does not remove the container by itself (no auto-remove, see specGen):
	// its exit status lasts as long as it does, and podman 4.3 answers a wait on a
	// removed container with "no such container" and one on a container only created
	// with 0 at once, so with auto-remove a command that exited before the service
	// looked the container up for the wait (a loaded host) lost its status. The run
	// removes it on every path out, on the normal one once it has the status; once,
	// however many paths ask.
	remove = sync.OnceFunc(func() { b.removeContainer(e, id) })
	if err := b.limitsIgnored(warnings, p); err != nil {
		remove()
		return nil, "", "", remove, err
	}
	// podman's service, not the request, chooses the runtime: a service started
	// without --runtime krun runs a plain container, so look before starting it.
	rt, imageID, err := e.Runtime(id)
	if err != nil || rt != s.Gen.OCIRuntime {
		remove()
		if err != nil {
			return nil, "", "", remove, fmt.Errorf("%w: inspecting the container: %w; the command did not run", isolator.ErrProtection, err)
		}
		return nil, "", "", remove, fmt.Errorf("%w: the podman service at %s runs containers with the runtime %s, not krun.runtime %s; start it with `podman --runtime %s system service`, or unset krun.podman_socket; the command did not run", isolator.ErrProtection, b.socketName(), rt, s.Gen.OCIRuntime, s.Gen.OCIRuntime)
	}
	return s, id, imageID, remove, nil
}
