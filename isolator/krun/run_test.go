package krun

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// fakeEngine plays podman and the container's init. Calls the test did not expect
// fail it.
type fakeEngine struct {
	imageEnv []string // the image's ENV
	// images are the images podman makes the containers from, one a create (the
	// last for the rest): "ID ENV..."; none is one image, fakeImage, of ENV imageEnv.
	// refImage is what the image's reference names at the inspect; images[0] when
	// unset.
	images   []string
	refImage string
	creates  int
	warnings []string // podman's warnings on create
	t        *testing.T
	runtime  string // what Runtime reports
	init     func(stdin io.Reader, stdout, stderr io.Writer, hello *wire.Hello)

	mu      sync.Mutex
	calls   []string
	created *specgen.SpecGenerator
	// markDead is whether the run's mark was dead when it created the container.
	markDead bool
	hello    *wire.Hello
	started  chan struct{}
	ended    chan struct{}
	exitLag  time.Duration // how long after the output ends Wait returns
	// lateLookup makes Wait look the container up only once it exited (a loaded
	// host, where podman's service gets to the wait late).
	lateLookup bool
	// The container's life as podman 4.3 has it: started, exited (the init
	// returned), gone (removed: by the run, or by podman itself with auto-remove).
	isStarted, exited, gone bool
	// removeFails fails that many removals of a running container after killing it
	// (podman's "container not running" when the kill races with its exit).
	removeFails int
	// lock, when set, must be held at every creation; createErrs are podman's answers
	// to the first creations (then it creates).
	lock       *fakeLock
	createErrs []error
	// killed, when set, is closed by the removal of a running container (the kill:
	// an init that waits on it ends then, whatever its stream); the removal then
	// returns only once a Wait has answered "no such container" and the attach
	// ended (streamClosed): the run sees the failed wait while the removal is still
	// under way, as on a loaded host. Nothing the removal waits for is the run's to
	// give: podman's forced removal kills the container, and its attach holds no
	// lock the removal takes.
	killed       chan struct{}
	waitFailed   chan struct{}
	streamClosed chan struct{}
}

// errSubIDsRefused is podman 4.3.1's answer to a creation when libsubid failed.
var errSubIDsRefused = errors.New("keep-id requires additional UIDs or GIDs defined in /etc/subuid and /etc/subgid to function correctly: %!w(<nil>)")

// errNoSuchContainer is podman's answer for a container it no longer has.
var errNoSuchContainer = errors.New(`no container with name or ID "c1" found: no such container`)

func newFake(t *testing.T, runtime string) *fakeEngine {
	return &fakeEngine{t: t, runtime: runtime, started: make(chan struct{}), ended: make(chan struct{})}
}

func (f *fakeEngine) call(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeEngine) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, " ")
}

func (f *fakeEngine) Version() (string, error) { f.t.Error("unexpected Version"); return "", nil }
func (f *fakeEngine) ImageExists(string) error { f.t.Error("unexpected ImageExists"); return nil }

// fakeImage is the fake's image ID.
const fakeImage = "0123456789abcdef"

func (f *fakeEngine) ImageEnv(image string) (string, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.images) == 0 {
		f.calls = append(f.calls, "image-env")
		return fakeImage, f.imageEnv, nil
	}
	f.calls = append(f.calls, "image-env("+image+")")
	if image == "img" {
		image = strings.Fields(cmp.Or(f.refImage, f.images[0]))[0]
	}
	for _, im := range append([]string{f.refImage}, f.images...) {
		if w := strings.Fields(im); len(w) > 0 && w[0] == image {
			return w[0], w[1:], nil
		}
	}
	return "", nil, errors.New("no such image")
}

// image is the image podman makes the n-th container (from 1) from: "ID ENV...".
func (f *fakeEngine) image(n int) string {
	if len(f.images) == 0 {
		return fakeImage
	}
	return f.images[min(n, len(f.images))-1]
}

func (f *fakeEngine) Create(g *specgen.SpecGenerator) (string, []string, error) {
	if f.lock != nil && !f.lock.isHeld() {
		f.t.Error("a creation without the creations' lock")
	}
	if len(f.createErrs) > 0 {
		err := f.createErrs[0]
		f.createErrs = f.createErrs[1:]
		f.call("create-refused")
		return "", nil, err
	}
	f.call("create")
	f.created = g
	f.mu.Lock()
	f.creates++
	f.mu.Unlock()
	f.markDead = runmark.Dead(g.Labels[LabelRunMark])
	// The files devsandbox generates for the container are there when podman reads
	// them: the passwd and group files, the VM's size, the seccomp profile.
	var generated []string
	for _, m := range g.Mounts {
		if m.Destination == "/etc/passwd" || m.Destination == "/etc/group" || m.Destination == VMConfigPath {
			generated = append(generated, m.Source)
		}
	}
	if g.SeccompProfilePath != "" {
		generated = append(generated, g.SeccompProfilePath)
	}
	for _, path := range generated {
		if _, err := os.Stat(path); err != nil {
			f.t.Errorf("the spec names %s, which is not there: %v", path, err)
		}
	}
	return "c1", f.warnings, nil
}

func (f *fakeEngine) Runtime(id string) (string, string, error) {
	f.call("runtime")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runtime, strings.Fields(f.image(f.creates))[0], nil
}

func (f *fakeEngine) Attach(id string, stdin io.Reader, stdout, stderr io.Writer, ready chan bool) error {
	f.call("attach")
	if f.streamClosed != nil {
		defer close(f.streamClosed)
	}
	ready <- true
	<-f.started
	typ, p, err := wire.ReadFrame(stdin)
	if err != nil && f.killed != nil && f.isGone() {
		return nil // the run ended the stream before its hello: the container was removed
	}
	if err != nil || typ != wire.FrameHello {
		f.t.Errorf("first frame: %c %v", typ, err)
		return err
	}
	h, _ := wire.ParseHello(p)
	f.call("hello")
	f.mu.Lock()
	f.hello = h
	f.mu.Unlock()
	f.init(stdin, stdout, stderr, h)
	f.mu.Lock()
	f.exited = true
	// podman's cleanup removes an auto-remove container once it exited.
	if f.created.Remove != nil && *f.created.Remove {
		f.gone = true
	}
	f.mu.Unlock()
	close(f.ended)
	return nil
}

func (f *fakeEngine) Start(id string) error {
	f.call("start")
	f.mu.Lock()
	f.isStarted = true
	f.mu.Unlock()
	close(f.started)
	return nil
}

func (f *fakeEngine) Pid(id string) (int, error) {
	f.call("pid")
	return 4242, nil
}

func (f *fakeEngine) Wait(id string) (int, error) {
	f.call("wait")
	f.mu.Lock()
	started := f.isStarted
	f.mu.Unlock()
	if !started {
		return 0, nil // podman 4.3: a container only created "exited" with 0
	}
	if f.lateLookup {
		<-f.ended
	}
	f.mu.Lock()
	gone := f.gone
	f.mu.Unlock()
	if gone {
		f.failWait()
		return -1, errNoSuchContainer
	}
	if f.killed != nil {
		select {
		case <-f.ended:
		case <-f.killed:
		}
		// Both may be there (the kill ended the init): a container removed once
		// running is one podman no longer has, whichever the wait saw first.
		if f.isGone() {
			f.failWait()
			return -1, errNoSuchContainer
		}
	}
	<-f.ended
	time.Sleep(f.exitLag)
	return 7, nil
}

// Remove records "remove" for a container that has not exited (podman kills it) and
// "rm-exited" for one that has.
func (f *fakeEngine) Pause(context.Context, string) error {
	return errors.New("fakeEngine: unexpected Pause")
}

func (f *fakeEngine) Unpause(context.Context, string) error {
	return errors.New("fakeEngine: unexpected Unpause")
}

func (f *fakeEngine) Remove(id string) error {
	f.mu.Lock()
	exited := f.exited
	if !exited && f.removeFails > 0 {
		f.removeFails--
		f.exited = true // killed, not removed
		f.mu.Unlock()
		f.call("remove-failed")
		return errors.New("container not running")
	}
	f.gone = true
	f.mu.Unlock()
	if exited {
		f.call("rm-exited")
	} else {
		f.call("remove")
	}
	if f.killed != nil && !exited {
		close(f.killed)
		<-f.waitFailed
		<-f.streamClosed
	}
	return nil
}

func (f *fakeEngine) isGone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone
}

// failWait records that a Wait answered "no such container".
func (f *fakeEngine) failWait() {
	if f.waitFailed != nil {
		close(f.waitFailed)
	}
}

// fakeHost answers the host probes; starting a service is unexpected.
type fakeHost struct {
	t     *testing.T
	noKVM bool
	lock  *fakeLock // nil: LockCreate is free
	// pinned is what Pin returns as the pinned sources (nil: none).
	pinned *pin.Set
	// down: no service listens (Listening is false).
	down bool
}

// fakeLock is the creations' lock: who took it, and whether it is held.
type fakeLock struct {
	mu    sync.Mutex
	held  bool
	paths []string
}

func (l *fakeLock) isHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

func (h fakeHost) LockCreate(ctx context.Context, path string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err // given up, as package flock's wait does
	}
	if h.lock == nil {
		return func() {}, nil
	}
	h.lock.mu.Lock()
	defer h.lock.mu.Unlock()
	if h.lock.held {
		h.t.Error("the creations' lock is taken twice")
	}
	h.lock.held = true
	h.lock.paths = append(h.lock.paths, path)
	return func() {
		h.lock.mu.Lock()
		defer h.lock.mu.Unlock()
		h.lock.held = false
	}, nil
}

// MarkRun is the host's: a session directory in the test's state directory.
func (fakeHost) MarkRun(ctx context.Context, stateDir string, stderr io.Writer, sigs <-chan handoff.Signal) (string, func(), error) {
	return osHost{}.MarkRun(ctx, stateDir, stderr, sigs)
}

func (h fakeHost) KVM() error {
	if h.noKVM {
		return &os.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.ENOENT}
	}
	return nil
}
func (fakeHost) HardLimits() (uint64, uint64)                         { return 4096, 0 }
func (h fakeHost) Listening(string) bool                              { return !h.down }
func (fakeHost) ServiceLimits(string) (int, map[string]uint64, error) { return 0, nil, nil }
func (fakeHost) ServiceRlimits(string) ([]spec.POSIXRlimit, error) {
	return []spec.POSIXRlimit{{Type: "memlock", Soft: 8388608, Hard: 8388608}, {Type: "nofile", Soft: 1024, Hard: 524288}}, nil
}
func (h fakeHost) StopService(string, int) error {
	h.t.Error("unexpected StopService")
	return nil
}
func (fakeHost) Systemd() bool { return false }
func (h fakeHost) Pin(p *isolator.Plan) (*isolator.Plan, string, *pin.Set, error) {
	return p, "", h.pinned, nil
}
func (fakeHost) StageAnchors(_, _ string, as []Anchor) (map[string]string, func(), error) {
	m := map[string]string{}
	for i, a := range as {
		m[a.Path] = fmt.Sprintf("/run/user/1000/devsandbox/anchors-x/%d", i)
	}
	return m, func() {}, nil
}
func (h fakeHost) StartService(context.Context, string, string, string) error {
	h.t.Error("unexpected StartService")
	return nil
}

func runPlan(t *testing.T) *isolator.Plan {
	dir := t.TempDir()
	p := basePlan()
	p.StateDir = filepath.Join(dir, "state")
	p.EmptyFile = filepath.Join(dir, "empty")
	p.PrivateDirs = []string{filepath.Join(dir, "private")}
	p.Secrets = []isolator.Secret{{Name: "API_TOKEN", EnvSource: "API_TOKEN"}}
	p.HostEnv = map[string]string{"API_TOKEN": "v4lue-never-in-spec"}
	return p
}

func backend(f *fakeEngine, t *testing.T) *Isolator {
	return &Isolator{
		Settings: helper.Settings{Image: "img", Runtime: "krun", CPUs: 2, MemoryMiB: 2048, Home: "/home/u"},
		host:     fakeHost{t: t},
		engineFn: func() (engine, error) { return f, nil },
		// The host services (the proxy of allowlist mode) are package hostsvc's to test.
		services: func(*isolator.Plan) (*hostsvc.Services, error) { return nil, nil },
	}
}

// A run: create, check the runtime, attach, start; the secret goes in the hello frame
// and nowhere in the spec; the exit status is the container's.
func TestRunSession(t *testing.T) {
	f := newFake(t, "krun")
	f.init = func(_ io.Reader, stdout, stderr io.Writer, h *wire.Hello) {
		fmt.Fprint(stderr, wire.ReadyMarker)
		fmt.Fprintf(stdout, "token=%s\n", h.Env["API_TOKEN"])
	}
	p := runPlan(t)
	var out, errb bytes.Buffer
	code, err := backend(f, t).Run(context.Background(), p, isolator.Stdio{Out: &out, Err: &errb})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v (stderr %q)", code, err, errb.String())
	}
	if out.String() != "token=v4lue-never-in-spec\n" {
		t.Errorf("stdout %q", out.String())
	}
	if got := f.Calls(); !strings.HasPrefix(got, "image-env create runtime attach start") || !strings.HasSuffix(got, "rm-exited") || strings.Contains(got, "remove") {
		t.Errorf("calls %q, want the container removed once it exited, and only then", got)
	}
	if f.created.Remove == nil || *f.created.Remove {
		t.Error("the container is created with auto-remove: its exit status can go with it before the run reads it")
	}
	b, _ := json.Marshal(f.created)
	if bytes.Contains(b, []byte("v4lue-never-in-spec")) {
		t.Error("the secret value is in the container spec")
	}
	if !strings.HasPrefix(f.created.Name, "devsandbox-app-0123abcd-") || f.created.Rlimits[0].Hard != 4096 {
		t.Errorf("name %q, rlimits %+v", f.created.Name, f.created.Rlimits)
	}
	// Every other rlimit is the service's own (fakeHost's memlock); its nofile is not
	// taken over the run's.
	if n := len(f.created.Rlimits); n < 2 || f.created.Rlimits[n-1] != (spec.POSIXRlimit{Type: "memlock", Soft: 8388608, Hard: 8388608}) {
		t.Errorf("rlimits %+v: want the service's memlock last, and nofile once", f.created.Rlimits)
	}
	for i, r := range f.created.Rlimits {
		if r.Type == "nofile" && (i != 0 || r.Hard != 4096) {
			t.Errorf("rlimits %+v: the service's nofile replaced or doubled the run's", f.created.Rlimits)
		}
	}
	// The run's mark, held while the container lives, is on it for the next runs.
	if m := f.created.Labels[LabelRunMark]; filepath.Dir(m) != filepath.Join(p.StateDir, runmark.Dir) || f.markDead || !runmark.Dead(m) {
		t.Errorf("label %s = %q (dead at the creation: %v): want the run's mark, held until the run ended", LabelRunMark, m, f.markDead)
	}
	if w := f.created.Labels[LabelRunWhere]; w == "" || w != runmark.Where() {
		t.Errorf("label %s = %q, want where the mark's path names it, %q", LabelRunWhere, w, runmark.Where())
	}
}

// Every creation holds the lock of the service's creations (podman 4.3's libsubid
// reads are not thread safe: see create), and releases it.
func TestRunCreatesInTurn(t *testing.T) {
	f := newFake(t, "krun")
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
	lock := &fakeLock{}
	f.lock = lock
	b := backend(f, t)
	b.host = fakeHost{t: t, lock: lock}
	b.Settings.RuntimeDir = "/run/user/1000"
	if code, err := b.Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil || code != 7 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if len(lock.paths) != 1 || lock.held {
		t.Fatalf("lock taken %d times (%q), held after the run: %v", len(lock.paths), lock.paths, lock.held)
	}
	want := createLockPath("/run/user/1000", 0, b.socketName())
	if lock.paths[0] != want || !strings.HasPrefix(want, "/run/user/1000/podman/devsandbox-create-") {
		t.Errorf("lock %q, want %q", lock.paths[0], want)
	}
	if other := createLockPath("/run/user/1000", 0, "/elsewhere/podman.sock"); other == want {
		t.Error("two sockets share one lock")
	}
}

// podman answering a creation with libsubid's failure (a client creating at the
// same moment): the run asks again, in turn, at most createTries times; then it
// refuses, saying what to check; other refusals are not asked again.
func TestRunCreateRefused(t *testing.T) {
	other := errors.New("some other refusal")
	cases := []struct {
		name      string
		errs      []error
		wantCalls string // the calls' start
		wantErr   string // "" for a run that ran
	}{
		{"once", []error{errSubIDsRefused}, "image-env create-refused create runtime attach start", ""},
		{"twice", []error{errSubIDsRefused, errSubIDsRefused}, "image-env create-refused create-refused create runtime attach start", ""},
		{"always", []error{errSubIDsRefused, errSubIDsRefused, errSubIDsRefused, errSubIDsRefused}, "image-env create-refused create-refused create-refused", "asked 3 times: `devsandbox doctor` checks that /etc/subuid"},
		{"other", []error{other}, "image-env create-refused", "some other refusal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, "krun")
			f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
			lock := &fakeLock{}
			f.lock, f.createErrs = lock, c.errs
			b := backend(f, t)
			b.host = fakeHost{t: t, lock: lock}
			code, err := b.Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
			if got := f.Calls(); !strings.HasPrefix(got, c.wantCalls) || (c.wantErr != "" && got != c.wantCalls) {
				t.Errorf("calls %q, want %q first", got, c.wantCalls)
			}
			if lock.isHeld() {
				t.Error("the creations' lock is held after the run")
			}
			if c.wantErr == "" {
				if err != nil || code != 7 {
					t.Errorf("Run = %d, %v; want 7", code, err)
				}
				return
			}
			if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "the command did not run") {
				t.Errorf("Run = %d, %v; want a refusal saying %q", code, err, c.wantErr)
			}
		})
	}
}

// The lock file: a second taker waits for the first (a taker that gives up leaves
// the lock free and the file alone), and takes it once the first releases it.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podman", "devsandbox-create-x.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	taken := make(chan error, 1)
	go func() {
		u, err := lockFile(ctx, path, func() { close(waiting) })
		if err == nil {
			u()
		}
		taken <- err
	}()
	<-waiting
	// Held: a third descriptor cannot take it either.
	probe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("the lock is free while held: %v", err)
	}
	cancel()
	if err := <-taken; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled taker: %v, want context.Canceled", err)
	}
	// The taker that gave up neither takes the lock once it is free nor makes the
	// file anew once it is gone.
	unlock()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the lock is held after its holder released it and its waiter gave up: %v", err)
	}
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	u, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("the lock after its release: %v", err)
	}
	u()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the lock is held after every taker released it: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file was made anew after its removal: %v", err)
	}
}

// podman reporting the exit seconds after the output ended (a loaded host): the
// status is still the command's.
func TestRunExitReportedLate(t *testing.T) {
	f := newFake(t, "krun")
	f.exitLag = 6 * time.Second
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
	code, err := backend(f, t).Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v, want 7", code, err)
	}
}

// A loaded host: the command exits before podman's service looks the container up for
// the wait. Were the container podman's to remove (auto-remove), its exit status would
// go with it ("no container with name or ID … found", and the run reported 125); the
// run keeps it until it has the status, then removes it.
func TestRunExitBeforeWaitLookup(t *testing.T) {
	f := newFake(t, "krun")
	f.lateLookup = true
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
	var errb bytes.Buffer
	code, err := backend(f, t).Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: &errb})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v, want the command's 7 (stderr %q)", code, err, errb.String())
	}
	if got := f.Calls(); !strings.HasSuffix(got, "rm-exited") {
		t.Errorf("calls %q: the container was not removed after the run", got)
	}
}

// An exit status podman never reports fails the run, but not as unavailable: the
// command has run, and sandbox.mode = auto must not run it again unsandboxed.
func TestRunExitNeverReported(t *testing.T) {
	f := newFake(t, "krun")
	f.exitLag = time.Hour
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
	b := backend(f, t)
	b.exitWait = 100 * time.Millisecond
	_, err := b.Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if err == nil || isolator.IsUnavailable(err) || !strings.Contains(err.Error(), "command ran but its status is unknown") {
		t.Fatalf("Run: %v (unavailable: %v)", err, isolator.IsUnavailable(err))
	}
}

// A microVM runtime without /dev/kvm fails as unavailable with devsandbox's own cause
// and fix, before podman is asked for anything.
func TestRunNoKVM(t *testing.T) {
	f := newFake(t, "krun")
	b := backend(f, t)
	b.host = fakeHost{t: t, noKVM: true}
	_, err := b.Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrUnavailable) || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), `krun.runtime "krun"`) || !strings.Contains(err.Error(), kvmFix) {
		t.Errorf("Run: %v", err)
	}
	if got := f.Calls(); got != "" {
		t.Errorf("podman was asked: %q", got)
	}
}

// A service that runs another runtime than krun.runtime is refused before start.
func TestRunRuntimeMismatch(t *testing.T) {
	f := newFake(t, "runc")
	_, err := backend(f, t).Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "runtime runc, not krun.runtime krun") {
		t.Errorf("Run: %v", err)
	}
	if got := f.Calls(); got != "image-env create runtime remove" {
		t.Errorf("calls %q", got)
	}
}

// The init's failure report fails the run closed with its reason.
func TestRunInitFailure(t *testing.T) {
	f := newFake(t, "krun")
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) {
		fmt.Fprint(stderr, wire.FailMarker("mask /p/.env is not an empty file"))
	}
	_, err := backend(f, t).Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "mask /p/.env") {
		t.Errorf("Run: %v", err)
	}
}

// A setup failure after a source was replaced on the host since it was pinned (the
// init's refusal of what was mounted, podman's refusal of the container) names the
// source and the race, and keeps the failure without devsandbox's guesses at its cause
// (the pointers to doctor and --dry-run); with every source in place, the failure as
// it is told otherwise.
func TestRunSourceGone(t *testing.T) {
	const refusal = "crun: mount `/home/u/data` to `/home/u/data`: No such file or directory: OCI runtime attempted to invoke a command that was not found"
	for _, at := range []string{"init", "create"} {
		for _, replace := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pins, err := pin.Plan(&isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: dir, Dest: dir}}})
			if err != nil {
				t.Fatal(err)
			}
			pins.Close()
			// What the runtime mounts: another directory moved to the name (made first,
			// so that it cannot get the removed one's inode number).
			race := func() {
				if !replace {
					return
				}
				if err := os.Mkdir(dir+".new", 0o755); err != nil {
					t.Error(err)
				}
				if err := os.Remove(dir); err != nil {
					t.Error(err)
				}
				if err := os.Rename(dir+".new", dir); err != nil {
					t.Error(err)
				}
			}
			f := newFake(t, "krun")
			var failure, guess string
			switch at {
			case "init":
				f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) {
					race()
					fmt.Fprint(stderr, wire.FailMarker("rw "+dir+" is not the file devsandbox opened for it"))
				}
				failure = "protection could not be applied: rw " + dir + " is not the file devsandbox opened for it; the command did not run"
			case "create":
				race()
				f.createErrs = []error{errors.New(refusal)}
				failure = "protection could not be applied: podman refused the container: " + refusal + "; the command did not run"
				guess = ". `devsandbox --dry-run` shows it, `devsandbox doctor` checks podman"
			}
			b := backend(f, t)
			b.host = fakeHost{t: t, pinned: pins}
			_, err = b.Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
			want := failure + guess
			if replace {
				want = "protection could not be applied: " + dir + " was removed or replaced on the host while the sandbox was being set up, so podman could not mount it as devsandbox checked it, and the command did not run: run it again once it is back, or without what binds it. The failure: " + failure
			}
			if !errors.Is(err, isolator.ErrProtection) || err == nil || err.Error() != want {
				t.Errorf("%s (source replaced: %v): Run:\n%v\nwant a protection's failure:\n%s", at, replace, err, want)
			}
		}
	}
}

// devsandbox gone (the control pipe ended): the container is removed at once, also
// when podman's forced removal fails once after its kill (the kill raced with the
// container's own exit).
func TestRunCancelRemoves(t *testing.T) {
	for _, removeFails := range []int{0, 1} {
		f := newFake(t, "krun")
		f.removeFails = removeFails
		gone := make(chan struct{})
		f.init = func(stdin io.Reader, _, stderr io.Writer, _ *wire.Hello) {
			fmt.Fprint(stderr, wire.ReadyMarker)
			<-gone
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := backend(f, t).Run(ctx, runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
			done <- err
		}()
		<-f.started
		cancel(handoff.ErrCallerGone)
		select {
		case err := <-done:
			if err == nil || !strings.Contains(f.Calls(), "remove") {
				t.Errorf("removal failing %d times: Run = %v, calls %q", removeFails, err, f.Calls())
			}
			f.mu.Lock()
			left := !f.gone
			f.mu.Unlock()
			if left {
				t.Errorf("removal failing %d times: the container is left; calls %q", removeFails, f.Calls())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("removal failing %d times: Run did not return after cancel", removeFails)
		}
		close(gone)
	}
}

// A run cancelled by its caller's end (handoff.ErrCallerGone) once the command
// runs: the removal makes podman's wait fail ("no such container") before the
// removal returns. The run reports the cancel, never a status it did not get: it
// once returned the init's report with status 125 and no error, or the cancel's
// error, depending on which it saw first.
func TestRunCancelWaitFails(t *testing.T) {
	f := newFake(t, "krun")
	f.killed = make(chan struct{})
	f.waitFailed = make(chan struct{})
	f.streamClosed = make(chan struct{})
	f.init = func(stdin io.Reader, _, stderr io.Writer, _ *wire.Hello) {
		fmt.Fprint(stderr, wire.ReadyMarker)
		go func() { _, _ = io.Copy(io.Discard, stdin) }()
		// Still running when podman kills it: slow to act on its stream's end (the
		// run ends it at once too), as on a loaded host.
		<-f.killed
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err = backend(f, t).Run(ctx, runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	}()
	<-f.started
	cancel(handoff.ErrCallerGone)
	<-done
	if err == nil || !errors.Is(err, handoff.ErrCallerGone) {
		t.Errorf("Run = %d, %v; want the cancel's error (calls %q)", code, err, f.Calls())
	}
	if !strings.Contains(f.Calls(), "remove") {
		t.Errorf("calls %q: the container was not removed", f.Calls())
	}
}

// A cancelled run (its caller still there) stops the command as bwrap does: SIGTERM
// to the command through the init, and the command's own exit status; the container
// is not removed by force. One that ignores SIGTERM has its session ended after the
// stop grace (the init's stream ends: the init kills it).
func TestRunCancelStopsGracefully(t *testing.T) {
	for _, ignores := range []bool{false, true} {
		f := newFake(t, "krun")
		f.init = func(stdin io.Reader, _, stderr io.Writer, _ *wire.Hello) {
			fmt.Fprint(stderr, wire.ReadyMarker)
			for {
				typ, p, err := wire.ReadFrame(stdin)
				if err != nil {
					return // the stream ended: the init kills the command
				}
				if typ == wire.FrameSignal && len(p) == 1 && syscall.Signal(p[0]) == syscall.SIGTERM && !ignores {
					return
				}
			}
		}
		b := backend(f, t)
		b.StopGrace = 50 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := b.Run(ctx, runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
			done <- err
		}()
		<-f.started
		cancel()
		select {
		case err := <-done:
			if err != nil || strings.Contains(f.Calls(), "remove") {
				t.Errorf("ignores SIGTERM %v: Run = %v, calls %q; want the command's status and no forced removal", ignores, err, f.Calls())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ignores SIGTERM %v: Run did not return after cancel", ignores)
		}
	}
}

// fakeNetns records the egress calls in the engine's transcript; fail, when set,
// fails the call whose program it names.
type fakeNetns struct {
	f    *fakeEngine
	fail string
	pid  int
}

func (n *fakeNetns) Open(pid int) (user, net *os.File, err error) {
	n.pid = pid
	user, _ = os.Open(os.DevNull)
	net, _ = os.Open(os.DevNull)
	return user, net, nil
}

func (n *fakeNetns) Run(_ context.Context, c egress.Call, files []*os.File) error {
	n.f.call(fmt.Sprintf("fw[%d](%s)", len(files), strings.Join(c.Argv, " ")))
	if n.fail != "" && c.Argv[len(c.Argv)-3] == n.fail {
		return errors.New("exit status 1: Error: Could not process rule")
	}
	return nil
}

func allowlistRun(t *testing.T) *isolator.Plan {
	p := runPlan(t)
	p.Egress = allowlistPlan().Egress
	return p
}

// Allowlist: the rules are applied in the running container's namespaces, from the
// host, before the init gets the hello frame (its go): the transcript is whole.
func TestRunAllowlistRulesBeforeHello(t *testing.T) {
	f := newFake(t, "krun")
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) { fmt.Fprint(stderr, wire.ReadyMarker) }
	b := backend(f, t)
	ns := &fakeNetns{f: f}
	b.netns = ns
	code, err := b.Run(context.Background(), allowlistRun(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	enter := "fw[2](/usr/bin/nsenter --user=/proc/self/fd/3 --net=/proc/self/fd/4 -- "
	want := "image-env create runtime attach start pid " + enter + "/usr/sbin/nft -f -) " + enter + "/usr/sbin/nft list chain inet devsandbox output) " +
		enter + "/usr/sbin/ip -6 route flush default) "
	// The hello comes after every call (the init reads it while the host already
	// waits for the container, so "wait" may be recorded first).
	if got := f.Calls(); !strings.HasPrefix(got, want) || !strings.Contains(got[len(want):], "hello") || strings.Contains(got, "remove") || ns.pid != 4242 {
		t.Errorf("calls\n%s\nwant prefix\n%s (pid %d)", got, want, ns.pid)
	}
}

// A call that fails removes the container: the init never gets its go, the command
// never runs, and the error says why and how to fix it.
func TestRunAllowlistRulesFail(t *testing.T) {
	f := newFake(t, "krun")
	f.init = func(io.Reader, io.Writer, io.Writer, *wire.Hello) { t.Error("the init got its go") }
	b := backend(f, t)
	b.netns = &fakeNetns{f: f, fail: "/usr/sbin/nft"}
	_, err := b.Run(context.Background(), allowlistRun(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !errors.Is(err, egress.ErrFirewall) || !strings.Contains(err.Error(), "install nftables") {
		t.Errorf("Run: %v", err)
	}
	if got := f.Calls(); !strings.HasSuffix(got, "-f -) remove") || strings.Contains(got, "hello") {
		t.Errorf("calls %q", got)
	}
}

// TestPodmanError: a failed API service is reported with podman's own reason, not the
// supervisor's closing line that only says it ended.
func TestPodmanError(t *testing.T) {
	for _, tt := range []struct{ log, want string }{
		{"Error: default OCI runtime \"krun\" not found: invalid argument\n" + superviseLogPrefix + "podman system service ended: exit status 125\n",
			"Error: default OCI runtime \"krun\" not found: invalid argument"},
		{superviseLogPrefix + "listen: address in use\n", superviseLogPrefix + "listen: address in use"},
		{"", ""},
	} {
		if got := podmanError([]byte(tt.log)); got != tt.want {
			t.Errorf("podmanError(%q) = %q, want %q", tt.log, got, tt.want)
		}
	}
}
