package docker

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/helper"
)

// TestAgentBind: on a local engine a one-shot container binds the relay's socket
// file alone, read-only, and a kept one the kept sessions' relays' directory, not
// the socket directory; the bind is not part of the kept container's hash; an
// engine's refusal of that source, and of it alone, drops it.
func TestAgentBind(t *testing.T) {
	plan := func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.None, SocketDir: "/run/user/1000/devsandbox/p1"}
		p.Proxy.Session = "5e55"
		p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/5e55.sock"}
		return p
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, keep := range []bool{false, true} {
		p := plan()
		o := opts
		o.Keep = keep
		if keep {
			p.SSHAgent.Socket = "/run/user/1000/devsandbox/p1/agent/kept/5e55.sock"
		}
		o = engineOptions(p, o)
		plain, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		bindAgent(p, &o, key)
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		want := mount.Mount{Type: mount.TypeBind, Source: p.SSHAgent.Socket, Target: agentBoundFile, ReadOnly: true}
		if keep {
			want = mount.Mount{Type: mount.TypeBind, Source: "/run/user/1000/devsandbox/p1/agent/kept", Target: agentBoundDir, ReadOnly: true}
		}
		binds := slices.DeleteFunc(slices.Clone(s.Host.Mounts), func(m mount.Mount) bool { return slices.Contains(plain.Host.Mounts, m) })
		if len(binds) != 1 || binds[0] != want || s.AgentBind != want.Source {
			t.Errorf("keep %v: the agent's mounts %+v (AgentBind %q), want only %+v", keep, binds, s.AgentBind, want)
		}
		if keep && s.Hash != plain.Hash {
			t.Errorf("the agent's bind changed the kept container's hash: %s, without %s", s.Hash, plain.Hash)
		}
		if agentUnseen(errors.New("Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: /home/u/src/app"), s) {
			t.Errorf("keep %v: another unseen source was taken for the agent's", keep)
		}
		if !agentUnseen(errors.New("Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: "+want.Source), s) {
			t.Errorf("keep %v: the agent's unseen source was not recognised", keep)
		}
		dropAgentBind(s)
		if !slices.Equal(s.Host.Mounts, plain.Host.Mounts) || s.AgentBind != "" {
			t.Errorf("keep %v: dropAgentBind left %+v", keep, s.Host.Mounts)
		}
	}
}

// TestBindsAgent: a kept container binds the relays' directory only when its
// inspect shows that source at agentBoundDir.
func TestBindsAgent(t *testing.T) {
	src := "/run/user/1000/devsandbox/p1/agent/kept"
	in := func(ms ...dockercontainer.MountPoint) dockercontainer.InspectResponse {
		return dockercontainer.InspectResponse{Mounts: ms}
	}
	for name, tc := range map[string]struct {
		in   dockercontainer.InspectResponse
		want bool
	}{
		"bound":              {in(dockercontainer.MountPoint{Type: mount.TypeBind, Source: src, Destination: agentBoundDir}), true},
		"none":               {in(), false},
		"another directory":  {in(dockercontainer.MountPoint{Type: mount.TypeBind, Source: "/home/u/.local/state/devsandbox/p1/sock/agent/kept", Destination: agentBoundDir}), false},
		"elsewhere in it":    {in(dockercontainer.MountPoint{Type: mount.TypeBind, Source: src, Destination: "/run/x"}), false},
		"a volume, not bind": {in(dockercontainer.MountPoint{Type: mount.TypeVolume, Source: src, Destination: agentBoundDir}), false},
	} {
		if got := bindsAgent(tc.in, src); got != tc.want {
			t.Errorf("%s: bindsAgent %v, want %v", name, got, tc.want)
		}
	}
}

// TestReusable: a kept container made from the spec's hash is reused, unless it binds
// the agent's relays (whatever their directory; in its mounts or, not running, its
// configuration) and docker.agent_bind is now off; with the key on, one without the
// bind is reused too. Another hash is never reused.
func TestReusable(t *testing.T) {
	bound := dockercontainer.MountPoint{Type: mount.TypeBind, Source: "/run/user/1000/devsandbox/p1/agent/kept", Destination: agentBoundDir}
	elsewhere := dockercontainer.MountPoint{Type: mount.TypeBind, Source: "/home/u/src/app", Destination: "/home/u/src/app"}
	in := func(hash string, configured []mount.Mount, ms ...dockercontainer.MountPoint) dockercontainer.InspectResponse {
		return dockercontainer.InspectResponse{ContainerJSONBase: &dockercontainer.ContainerJSONBase{HostConfig: &dockercontainer.HostConfig{Mounts: configured}},
			Config: &dockercontainer.Config{Labels: map[string]string{LabelSpec: hash}}, Mounts: ms}
	}
	stopped := []mount.Mount{{Type: mount.TypeBind, Source: bound.Source, Target: agentBoundDir, ReadOnly: true}}
	for name, tc := range map[string]struct {
		in      dockercontainer.InspectResponse
		off, on bool // reusable with the key off, on
	}{
		"no bind":                  {in("h1", nil, elsewhere), true, true},
		"bound":                    {in("h1", stopped, elsewhere, bound), false, true},
		"bound, another directory": {in("h1", nil, dockercontainer.MountPoint{Type: mount.TypeBind, Source: "/tmp/x/agent/kept", Destination: agentBoundDir}), false, true},
		"bound, configured only":   {in("h1", stopped), false, true},
		"another hash":             {in("h2", nil), false, false},
		"another hash, bound":      {in("h2", stopped, bound), false, false},
		"no configuration":         {dockercontainer.InspectResponse{}, false, false},
		"no base, bound":           {dockercontainer.InspectResponse{Config: &dockercontainer.Config{Labels: map[string]string{LabelSpec: "h1"}}, Mounts: []dockercontainer.MountPoint{bound}}, false, true},
		"no base, not bound":       {dockercontainer.InspectResponse{Config: &dockercontainer.Config{Labels: map[string]string{LabelSpec: "h1"}}}, true, true},
	} {
		for _, on := range []bool{false, true} {
			want := map[bool]bool{false: tc.off, true: tc.on}[on]
			if got := reusable(tc.in, &Spec{Hash: "h1", AgentBindOn: on}); got != want {
				t.Errorf("%s, agent_bind %v: reusable %v, want %v", name, on, got, want)
			}
		}
	}
	if why := outdated(in("h1", stopped, bound), &Spec{Hash: "h1"}); !strings.Contains(why, "docker.agent_bind") {
		t.Errorf("a bound container with the key off: %q does not name the key", why)
	}
	if why := outdated(in("h2", nil), &Spec{Hash: "h1"}); !strings.Contains(why, "spec h2, now h1") {
		t.Errorf("another hash: %q", why)
	}
}

// TestKeptAgentBindOff: a kept container made with docker.agent_bind on a local
// engine, whose bind of the relays' directory its inspect shows, is recreated, saying
// why, by a run with the key off, and the new one binds no relays; with the key on
// again it is reused (not recreated for the bind). translate records the key.
func TestKeptAgentBindOff(t *testing.T) {
	f := newFake(t)
	b, p := testIsolator(t, f, true)
	var warned []string
	b.Warn = func(s string) { warned = append(warned, s) }
	p.Egress = egress.Rules{Mode: egress.None, SocketDir: "/run/user/1000/devsandbox/p1"}
	p.Proxy.Session = "5e55"
	p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/kept/5e55.sock"}
	addr := Address{Host: "unix:///fake.sock"}
	render := func(on bool) *Spec {
		t.Helper()
		o := b.Options
		o.BindAgent = on
		o = engineOptions(p, o)
		if on {
			bindAgent(p, &o, []byte("0123456789abcdef0123456789abcdef"))
		}
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		if s.AgentBindOn != on {
			t.Fatalf("translate: AgentBindOn %v, want %v", s.AgentBindOn, on)
		}
		return s
	}
	ctx := context.Background()
	made, _, err := b.keptContainer(ctx, f, addr, render(true))
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := f.ContainerInspect(ctx, made); !bindsAnyAgent(in) {
		t.Fatalf("the container made with the key binds no relays: %+v", in.Mounts)
	}
	// A session (made with the key) is attached: the run with the key off is
	// refused, naming the key, and the container stays.
	f.mu.Lock()
	f.execs["x-attached"] = &fakeExec{id: "x-attached", c: f.containers[made], running: true}
	f.containers[made].execIDs = append(f.containers[made].execIDs, "x-attached")
	f.mu.Unlock()
	if _, _, err := b.keptContainer(ctx, f, addr, render(false)); !errors.Is(err, ErrSpecChanged) || !strings.Contains(err.Error(), "docker.agent_bind") {
		t.Errorf("key off, a session attached: %v, want ErrSpecChanged naming docker.agent_bind", err)
	}
	if _, ok := f.containers[made]; !ok || len(warned) != 0 {
		t.Fatalf("key off, a session attached: the container went (warned %q)", warned)
	}
	f.mu.Lock()
	f.execs["x-attached"].running = false
	f.mu.Unlock()
	off, fresh, err := b.keptContainer(ctx, f, addr, render(false))
	if err != nil || off == made || !fresh {
		t.Fatalf("key off: %s (was %s), fresh %v, %v", off, made, fresh, err)
	}
	if in, _ := f.ContainerInspect(ctx, off); bindsAnyAgent(in) {
		t.Errorf("key off: the new kept container binds the relays: %+v", in.Mounts)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "docker.agent_bind") || !strings.Contains(warned[0], "recreating it") {
		t.Errorf("key off: warned %q", warned)
	}
	if _, ok := f.containers[made]; ok {
		t.Errorf("the container with the bind is still there")
	}
	on, fresh, err := b.keptContainer(ctx, f, addr, render(true))
	if err != nil || on != off || fresh || len(warned) != 1 {
		t.Errorf("key on again: %s (was %s), fresh %v, %v, warned %q", on, off, fresh, err, warned)
	}
}

// TestAgentVerdict: a refusal is remembered for its engine and socket directory
// only, and for agentVerdictFor.
func TestAgentVerdict(t *testing.T) {
	state := t.TempDir()
	v := newAgentVerdict(state, "/var/lib/dsb-remote/docker.sock", "/run/user/1000/devsandbox/p1")
	now := time.Now()
	if v.refused(now) {
		t.Fatal("refused before any refusal")
	}
	v.note()
	if !v.refused(now) {
		t.Error("the refusal was not remembered")
	}
	if v.refused(now.Add(agentVerdictFor + time.Minute)) {
		t.Error("the refusal was remembered past agentVerdictFor")
	}
	for _, other := range []*agentVerdict{
		newAgentVerdict(state, "/var/run/docker.sock", "/run/user/1000/devsandbox/p1"),
		newAgentVerdict(state, "/var/lib/dsb-remote/docker.sock", "/home/u/.local/state/devsandbox/p1/sock"),
	} {
		if other.refused(now) {
			t.Errorf("a refusal for another engine or socket directory turned the bind off: %q", other.record)
		}
	}
	var none *agentVerdict
	none.note() // a spec without a verdict records nothing
}

// TestAgentBindOptIn: a run asks the engine to bind the agent's relay only with
// docker.agent_bind (the helper's settings carry it), on a local engine, with an
// agent forwarded; by default the stream on every engine (DESIGN guarantee 11).
func TestAgentBindOptIn(t *testing.T) {
	withAgent := basePlan()
	withAgent.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/5e55.sock"}
	local, remote := Address{Host: "unix:///var/run/docker.sock"}, Address{Host: "tcp://build:2376"}
	for _, tc := range []struct {
		settings helper.Settings
		addr     Address
		p        *isolator.Plan
		want     bool
	}{
		{helper.Settings{}, local, withAgent, false},
		{helper.Settings{Keep: true}, local, withAgent, false},
		{helper.Settings{AgentBind: true}, local, withAgent, runtime.GOOS == "linux"},
		{helper.Settings{AgentBind: true, Keep: true}, local, withAgent, runtime.GOOS == "linux"},
		{helper.Settings{AgentBind: true}, remote, withAgent, false},
		{helper.Settings{AgentBind: true}, local, basePlan(), false},
	} {
		if got := New(tc.settings, nil).asksAgentBind(tc.addr, tc.p); got != tc.want {
			t.Errorf("settings %+v, engine %s, agent %q: asks for the bind %v, want %v", tc.settings, tc.addr.Host, tc.p.SSHAgent.Socket, got, tc.want)
		}
	}
}
