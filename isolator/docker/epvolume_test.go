package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// refusedCompanionEngine is an engine that cannot start the session's companion (its
// published port is taken on the engine's host), and that, as dockerd does, makes a
// volume a container names and that does not exist: an ordinary one, with no label,
// which nothing of devsandbox's finds or removes afterwards. It refuses to remove a
// volume a container still mounts. The companion's start fails only once the
// sandbox's container exists (the two are made at once; the sandbox's may come
// first), and its order of events is kept.
type refusedCompanionEngine struct {
	*fakeEngine
	sandboxMade chan struct{}
	once        sync.Once
	// allowCompanion: the companion starts (the engine refuses nothing).
	allowCompanion bool

	mu     sync.Mutex
	events []string
	made   []string // volumes the engine made itself
}

func (r *refusedCompanionEngine) event(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := fmt.Sprintf(format, args...)
	if n := len(r.events); n > 0 && strings.TrimSuffix(r.events[n-1], " (again)") == e {
		r.events[n-1] = e + " (again)" // a retry loop's attempts, once
		return
	}
	r.events = append(r.events, e)
}

func (r *refusedCompanionEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	if name != "" {
		r.fakeEngine.mu.Lock()
		for _, m := range host.Mounts {
			if _, ok := r.fakeEngine.volumes[m.Source]; m.Type == mount.TypeVolume && !ok {
				r.fakeEngine.volumes[m.Source] = volume.CreateOptions{Name: m.Source}
				r.mu.Lock()
				r.made = append(r.made, m.Source)
				r.mu.Unlock()
			}
		}
		r.fakeEngine.mu.Unlock()
	}
	resp, err := r.fakeEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
	if err == nil && name != "" && cfg.Labels[LabelRole] == "" {
		r.event("sandbox created")
		r.once.Do(func() { close(r.sandboxMade) })
	}
	return resp, err
}

func (r *refusedCompanionEngine) ContainerStart(ctx context.Context, id string, o dockercontainer.StartOptions) error {
	r.fakeEngine.mu.Lock()
	c := r.fakeEngine.containers[id]
	r.fakeEngine.mu.Unlock()
	if c != nil && c.cfg.Labels[LabelRole] == roleCompanion && !r.allowCompanion {
		select {
		case <-r.sandboxMade:
		case <-time.After(30 * time.Second):
			r.t.Error("the sandbox's container was never made beside the companion")
		}
		r.event("companion refused")
		return errors.New("driver failed programming external connectivity: Bind for 127.0.0.1:18080 failed: port is already allocated")
	}
	return r.fakeEngine.ContainerStart(ctx, id, o)
}

func (r *refusedCompanionEngine) ContainerRemove(ctx context.Context, id string, o dockercontainer.RemoveOptions) error {
	r.fakeEngine.mu.Lock()
	c := r.fakeEngine.containers[id]
	r.fakeEngine.mu.Unlock()
	err := r.fakeEngine.ContainerRemove(ctx, id, o)
	if err == nil && c != nil && c.name != "" && c.cfg.Labels[LabelRole] == "" {
		r.event("sandbox removed")
	}
	return err
}

func (r *refusedCompanionEngine) VolumeRemove(ctx context.Context, name string, force bool) error {
	r.fakeEngine.mu.Lock()
	for _, c := range r.fakeEngine.containers {
		for _, m := range c.host.Mounts {
			if m.Type == mount.TypeVolume && m.Source == name {
				r.fakeEngine.mu.Unlock()
				r.event("remove %s refused: in use", name)
				return fmt.Errorf("remove %s: volume is in use - [%s]: %w", name, c.id, cerrdefs.ErrConflict)
			}
		}
	}
	r.fakeEngine.mu.Unlock()
	r.event("remove %s", name)
	return r.fakeEngine.VolumeRemove(ctx, name, force)
}

// A session whose companion the engine refuses (a published port taken) while the
// sandbox's container is made beside it: the run fails closed, and the session's
// endpoint volume is removed only once the sandbox's container is gone. Removed
// earlier, a sandbox container made after the removal makes the engine create a
// volume of that name itself (root's, unlabelled), which stayed in the engine after
// every such run: `sandboxes prune` finds volumes by label.
func TestEndpointVolumeOutlivesTheSandbox(t *testing.T) {
	f := newFake(t)
	f.noHello = true
	r := &refusedCompanionEngine{fakeEngine: f, sandboxMade: make(chan struct{})}
	b, p := testIsolator(t, f, false)
	b.dial = func() (Engine, Address, error) { return r, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-5e55.sock"}, SocketDir: "/run/x",
		PublishDir: "/run/x/publish-5e55", Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy = isolator.ProxyConfig{Session: "5e55", Default: "deny"}
	ep := endpointVolume(p, false)
	_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "port is already allocated") || !strings.Contains(err.Error(), "--publish") {
		t.Fatalf("Run: %v, want the companion's refusal, failed closed, with the fix", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	removed, first := -1, -1
	for i, e := range r.events {
		if e == "sandbox removed" && removed < 0 {
			removed = i
		}
		if strings.HasPrefix(e, "remove "+ep) && first < 0 {
			first = i
		}
	}
	if removed < 0 || first < removed {
		t.Errorf("events %q: the endpoint volume %s was removed (or its removal tried) before the sandbox's container was gone; a sandbox made after its removal gets an engine-made volume of that name", r.events, ep)
	}
	if len(r.made) > 0 {
		t.Errorf("the engine made the volumes %q itself (a container named them after their removal)", r.made)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.volumes[ep]; ok {
		t.Errorf("the endpoint volume %s is left in the engine after the run (events %q)", ep, r.events)
	}
}

// lateCreateEngine is an engine that gets the sandbox's create while the run is being
// cancelled: the create's answer comes only once the run's context has ended. A
// client that stops waiting then does not stop the engine: it makes the container
// all the same, after the run returned (and removed what it had), as dockerd does
// with a request it has read; a volume the container names that is gone by then it
// makes itself, unlabelled (refusedCompanionEngine's ContainerCreate).
type lateCreateEngine struct {
	*refusedCompanionEngine
	entered  chan struct{}
	canceled <-chan struct{} // the run's context's end
	returned chan struct{}   // Run returned
	late     sync.WaitGroup
}

func (l *lateCreateEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	if name == "" || cfg.Labels[LabelRole] != "" {
		return l.refusedCompanionEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
	}
	close(l.entered)
	select {
	case <-l.canceled:
	case <-time.After(30 * time.Second):
		l.t.Error("the run was not cancelled while its container was being created")
	}
	select {
	case <-ctx.Done():
		// The client gave up; the engine goes on.
		l.late.Add(1)
		go func() {
			defer l.late.Done()
			<-l.returned
			_, _ = l.refusedCompanionEngine.ContainerCreate(context.Background(), cfg, host, nc, pl, name)
		}()
		return dockercontainer.CreateResponse{}, ctx.Err()
	default:
		return l.refusedCompanionEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
	}
}

// A run cancelled while the engine creates its sandbox's container leaves nothing in
// the engine: the container the engine makes is removed, and the session's endpoint
// volume too, once that container is gone. Cut short, the create left the container
// to the engine, which made it after the run had removed the volume, and with it the
// volume again, unlabelled (left by a CI run: an embedding harness's run cancelled
// in its start, TestEmbedScenarios).
func TestCancelDuringCreateLeavesNothing(t *testing.T) {
	f := newFake(t)
	f.noHello = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &refusedCompanionEngine{fakeEngine: f, sandboxMade: make(chan struct{}), allowCompanion: true}
	l := &lateCreateEngine{refusedCompanionEngine: r, entered: make(chan struct{}), canceled: ctx.Done(), returned: make(chan struct{})}
	b, p := testIsolator(t, f, false)
	b.dial = func() (Engine, Address, error) { return l, Address{Host: "unix:///fake.sock", Origin: "test"}, nil }
	p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-5e55.sock"}, SocketDir: "/run/x",
		PublishDir: "/run/x/publish-5e55", Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy = isolator.ProxyConfig{Session: "5e55", Default: "deny"}
	go func() {
		select {
		case <-l.entered:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	_, err := b.Run(ctx, p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
	close(l.returned)
	l.late.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want the cancel", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.made) > 0 {
		t.Errorf("the engine made the volumes %q itself (a container created after their removal)", r.made)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, c := range f.containers {
		if c.name != "" && c.cfg.Labels[LabelRole] == "" {
			t.Errorf("the sandbox's container %s is left in the engine (events %q)", name, r.events)
		}
	}
	ep := endpointVolume(p, false)
	if _, ok := f.volumes[ep]; ok {
		t.Errorf("the endpoint volume %s is left in the engine (events %q)", ep, r.events)
	}
}

// slowCreateEngine answers a create only after answer is closed, as a busy engine
// would, or gives up when the client does.
type slowCreateEngine struct {
	*fakeEngine
	answer <-chan struct{}
}

func (s *slowCreateEngine) ContainerCreate(ctx context.Context, cfg *dockercontainer.Config, host *dockercontainer.HostConfig, nc *network.NetworkingConfig, pl *ocispec.Platform, name string) (dockercontainer.CreateResponse, error) {
	select {
	case <-s.answer:
	case <-ctx.Done():
		return dockercontainer.CreateResponse{}, ctx.Err()
	}
	return s.fakeEngine.ContainerCreate(ctx, cfg, host, nc, pl, name)
}

// A create the engine takes longer than createBound to answer, in a run that was not
// cancelled, succeeds: the bound is on the wait after the run's end, not on the
// create itself.
func TestSlowCreateOfALiveRun(t *testing.T) {
	defer func(d time.Duration) { createBound = d }(createBound)
	createBound = 20 * time.Millisecond
	answer := make(chan struct{})
	time.AfterFunc(10*createBound, func() { close(answer) }) // the engine's latency
	s := &slowCreateEngine{fakeEngine: newFake(t), answer: answer}
	created, err := createNamed(context.Background(), s, &dockercontainer.Config{Image: "devsandbox/default:1.0", Healthcheck: &dockercontainer.HealthConfig{Test: []string{"NONE"}}}, &dockercontainer.HostConfig{}, nil, "devsandbox-slow-create")
	if err != nil {
		t.Fatalf("a create slower than the bound failed a live run: %v", err)
	}
	if created.ID == "" {
		t.Fatal("no container was created")
	}
}

// Once the run has ended, a create the engine does not answer is given up after
// createBound, with the run's cancel as its error.
func TestCreateOfAnEndedRunIsBounded(t *testing.T) {
	defer func(d time.Duration) { createBound = d }(createBound)
	createBound = 20 * time.Millisecond
	never := make(chan struct{})
	defer close(never)
	s := &slowCreateEngine{fakeEngine: newFake(t), answer: never}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() {
		_, err := createNamed(ctx, s, &dockercontainer.Config{Image: "devsandbox/default:1.0", Healthcheck: &dockercontainer.HealthConfig{Test: []string{"NONE"}}}, &dockercontainer.HostConfig{}, nil, "devsandbox-never-answered")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("createNamed: %v, want the run's cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the create of an ended run was waited for beyond its bound")
	}
}
