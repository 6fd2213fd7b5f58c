package docker

import (
	"errors"
	"runtime"
	"slices"
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
