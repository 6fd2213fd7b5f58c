package docker

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
	"github.com/devsandbox/devsandbox/tools"
)

// fakeSocket is a FileInfo of a socket (or, with mode, another file) owned by uid.
type fakeSocket struct {
	uid  uint32
	mode fs.FileMode
}

func (f fakeSocket) Name() string       { return "docker.sock" }
func (f fakeSocket) Size() int64        { return 0 }
func (f fakeSocket) Mode() fs.FileMode  { return f.mode }
func (f fakeSocket) ModTime() time.Time { return time.Time{} }
func (f fakeSocket) IsDir() bool        { return false }
func (f fakeSocket) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// An engine is the user's own (rootless) only by a Unix socket of this host that the
// user, not root, owns; the path is the one the address names.
func TestOwnEngine(t *testing.T) {
	const sock = "/run/user/1000/docker.sock"
	for _, tc := range []struct {
		name string
		host string
		uid  int
		fi   fs.FileInfo
		err  error
		want bool
	}{
		{"the user's socket", "unix://" + sock, 1000, fakeSocket{1000, fs.ModeSocket | 0o660}, nil, true},
		{"root's socket", "unix://" + sock, 1000, fakeSocket{0, fs.ModeSocket | 0o660}, nil, false},
		{"another user's socket", "unix://" + sock, 1000, fakeSocket{1001, fs.ModeSocket | 0o660}, nil, false},
		{"the user's regular file", "unix://" + sock, 1000, fakeSocket{1000, 0o600}, nil, false},
		{"no socket", "unix://" + sock, 1000, nil, fs.ErrNotExist, false},
		{"root running devsandbox", "unix://" + sock, 0, fakeSocket{0, fs.ModeSocket | 0o660}, nil, false},
		{"tcp", "tcp://127.0.0.1:2376", 1000, fakeSocket{1000, fs.ModeSocket}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stat := func(p string) (fs.FileInfo, error) {
				if p != sock {
					t.Fatalf("stat %s, want %s", p, sock)
				}
				return tc.fi, tc.err
			}
			if got := ownEngine(engineaddr.Address{Host: tc.host}, tc.uid, stat); got != tc.want {
				t.Errorf("ownEngine = %v, want %v", got, tc.want)
			}
		})
	}
}

// On a real socket of the test's own.
func TestOwnEngineRealSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a := engineaddr.Address{Host: "unix://" + sock}
	if uid := os.Getuid(); uid != 0 && !ownEngine(a, uid, os.Stat) {
		t.Errorf("a socket of uid %d's is not recognised as its engine's", uid)
	}
	if ownEngine(a, os.Getuid()+1, os.Stat) {
		t.Errorf("a socket of another uid's is taken for the user's engine")
	}
}

// A rootless engine without cgroups drops limits without a warning: a run that asks
// for one is refused (125), naming each limit; none asked for passes.
func TestRootlessLimits(t *testing.T) {
	none := system.Info{CgroupDriver: "none", CgroupVersion: "1"}
	err := rootlessLimits(isolator.Limits{Pids: 4096, Memory: 1 << 30, CPUs: 1.5}, none)
	if !errors.Is(err, isolator.ErrProtection) {
		t.Fatalf("limits on an engine without cgroups: %v, want ErrProtection", err)
	}
	const want = `protection could not be applied: the rootless docker engine cannot apply limits.pids = 4096, limits.memory = 1073741824 bytes, limits.cpus = 1.5 (cgroup driver "none", cgroup v1: it would start the sandbox without them); the command did not run. Run the engine on a cgroup v2 host with the controllers delegated to your user (Docker's rootless guide, "Limiting resources"), or run without the limit: remove limits.memory and limits.cpus from the config, and set limits.pids to 0 (--pids=0; it is 4096 unless set)`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	if err := rootlessLimits(isolator.Limits{}, none); err != nil {
		t.Errorf("no limit asked for: %v", err)
	}
	all := system.Info{PidsLimit: true, MemoryLimit: true, CPUCfsQuota: true, CgroupDriver: "systemd", CgroupVersion: "2"}
	if err := rootlessLimits(isolator.Limits{Pids: 4096, Memory: 1 << 30, CPUs: 1.5}, all); err != nil {
		t.Errorf("an engine with the controllers delegated: %v", err)
	}
	pidsOnly := system.Info{PidsLimit: true, CgroupDriver: "systemd", CgroupVersion: "2"}
	if err := rootlessLimits(isolator.Limits{Pids: 4096, CPUs: 2}, pidsOnly); err == nil {
		t.Errorf("cpus on an engine without the cpu controller: not refused")
	}
}

// The command runs as the container's root only on an engine that says it is
// rootless (Docker Desktop's socket is the user's too), whose limits are checked
// first; no question is asked of an engine whose socket is not the user's (nil).
func TestRootlessPlan(t *testing.T) {
	answer := func(in system.Info) *future[ownAnswer] {
		return fetch(func() (ownAnswer, error) { return ownAnswer{info: in}, nil })
	}
	rootless := system.Info{SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless"}, CgroupDriver: "none", CgroupVersion: "1"}
	p := basePlan()
	if q, err := rootlessPlan(p, nil, engineaddr.Address{}); err != nil || q != p {
		t.Errorf("no Info asked: plan replaced (%v)", err)
	}
	if q, err := rootlessPlan(p, answer(system.Info{SecurityOptions: []string{"name=seccomp,profile=default"}}), engineaddr.Address{}); err != nil || q != p {
		t.Errorf("a rootful engine whose socket is the user's: plan replaced (%v)", err)
	}
	p.Limits = isolator.Limits{}
	q, err := rootlessPlan(p, answer(rootless), engineaddr.Address{})
	if err != nil || !q.User.ContainerRoot || p.User.ContainerRoot {
		t.Errorf("a rootless engine: %+v (%v), want a copy as the container's root", q.User, err)
	}
	p.Limits = isolator.Limits{Pids: 4096}
	if _, err := rootlessPlan(p, answer(rootless), engineaddr.Address{}); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("a limit a rootless engine without cgroups drops: %v, want ErrProtection", err)
	}
}

// Podman's Docker-compatible API (its version's Components name the Podman Engine)
// is refused as an unavailable isolator, naming the isolators that work there;
// Docker's components do not trip it.
func TestRootlessPlanPodman(t *testing.T) {
	pm := types.Version{Version: "4.3.1", Components: []types.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}, {Name: "Conmon"}}}
	docker := types.Version{Version: "26.1.5", Components: []types.ComponentVersion{{Name: "Engine", Version: "26.1.5"}, {Name: "containerd"}, {Name: "runc"}}}
	if podman(docker) != "" || podman(pm) != "4.3.1" {
		t.Fatalf("podman(docker) = %q, podman(podman) = %q", podman(docker), podman(pm))
	}
	ans := fetch(func() (ownAnswer, error) { return ownAnswer{version: pm}, nil })
	_, err := rootlessPlan(basePlan(), ans, engineaddr.Address{Host: "unix:///run/user/1000/podman/podman.sock"})
	want := "the engine at unix:///run/user/1000/podman/podman.sock is Podman 4.3.1's Docker-compatible API"
	if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--isolator krun") {
		t.Errorf("on podman: %v, want ErrUnavailable naming it and the other isolators", err)
	}
}

// On a rootless engine the agent is forwarded, carried by another container uid
// than the command's (the container's root): the exec runs as AgentCarrierID and
// the agent's tmpfs is that uid's. On a rootful engine (the command is the user's
// uid) the carrier stays root and the tmpfs carries no owner option (the spec of a
// kept container is unchanged).
func TestRootlessPlanAgent(t *testing.T) {
	p := basePlan()
	p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/5e55.sock"}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.SSHAgent.Socket, Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"})
	p.Env = append(p.Env, isolator.EnvVar{Name: "SSH_AUTH_SOCK", Value: "/run/devsandbox/ssh-agent.sock"})
	ans := fetch(func() (ownAnswer, error) {
		return ownAnswer{info: system.Info{SecurityOptions: []string{"name=rootless"}, PidsLimit: true}}, nil
	})
	q, err := rootlessPlan(p, ans, engineaddr.Address{})
	if err != nil || q.SSHAgent != p.SSHAgent || !slices.ContainsFunc(q.Env, func(e isolator.EnvVar) bool { return e.Name == "SSH_AUTH_SOCK" }) {
		t.Fatalf("err %v: want the agent kept in the plan: %+v, env %+v", err, q.SSHAgent, q.Env)
	}
	for _, c := range []struct {
		what       string
		plan       *isolator.Plan
		user, opts string
	}{
		{"rootless", q, "65534:65534", "rw,nosuid,nodev,noexec,mode=0755,uid=65534,gid=65534"},
		{"rootful", p, "0:0", "rw,nosuid,nodev,noexec,mode=0755"},
	} {
		sock := agentSocket(c.plan)
		if x := agentExec(sock, c.plan.User); x.User != c.user {
			t.Errorf("%s: the carrier's exec runs as %s, want %s", c.what, x.User, c.user)
		}
		s, err := containerConfig(agentless(c.plan), Options{Image: "img", Shipped: true, MaskSource: "/engine/empty", AgentSocket: sock})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Host.Tmpfs[container.AgentDir]; got != c.opts {
			t.Errorf("%s: the agent's tmpfs: %q, want %q", c.what, got, c.opts)
		}
	}
}

// A content file (the ssh tool's ~/.ssh/config) is the command's: on a rootless
// engine the container's uid 0 (contentSources, proved by TestSSHLoginThroughAgent
// on docker-rootless), in a volume of another name than the user's uid's one that
// earlier versions made there (a subordinate id, whose file ssh refused as "Bad
// owner"), so such a volume is never reused.
func TestRootlessContentVolume(t *testing.T) {
	c := []byte("Host *\n")
	if contentVolume("p", c, true) == contentVolume("p", c, false) {
		t.Errorf("the container root's content volume has the user's name %s", contentVolume("p", c, false))
	}
}

// The plan is copied, never changed, and only for the user's own engine.
func TestAsContainerRoot(t *testing.T) {
	p := basePlan()
	if q := asContainerRoot(p, false); q != p {
		t.Errorf("a rootful engine's plan was replaced")
	}
	q := asContainerRoot(p, true)
	if p.User.ContainerRoot || !q.User.ContainerRoot || q.User.UID != p.User.UID {
		t.Errorf("plan %+v, copy %+v: want the copy alone as the container's root, with the user's uid", p.User, q.User)
	}
	if uid, gid := q.User.InContainer(); uid != 0 || gid != 0 {
		t.Errorf("in the container: %d:%d, want 0:0", uid, gid)
	}
}

// The proxy's companion and the endpoint volume are the sandbox's own identity's:
// the container's root could not enter a volume of a subordinate id's.
func TestCompanionAsContainerRoot(t *testing.T) {
	p := asContainerRoot(basePlan(), true)
	cfg, _ := companionConfig(p, "img", nil, "vol", map[string]string{LabelUser: "1000"}, false)
	if cfg.User != "0:0" || cfg.Labels[LabelUser] != "1000" {
		t.Errorf("companion user %q, uid label %q: want 0:0 and the user's 1000", cfg.User, cfg.Labels[LabelUser])
	}
	o := endpointVolumeOptions(p, "vol", nil)
	if got, want := o.DriverOpts["o"], "uid=0,gid=0,mode=0700,size=16m"; got != want {
		t.Errorf("endpoint volume options %q, want %q", got, want)
	}
}

// Doctor names how the command runs on each kind of engine, and which mismatch
// makes runs fail.
func TestRootlessRows(t *testing.T) {
	rootless := system.Info{SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless"}, CgroupDriver: "none", CgroupVersion: "1"}
	rootful := system.Info{SecurityOptions: []string{"name=seccomp,profile=default"}, PidsLimit: true, MemoryLimit: true, CPUCfsQuota: true}
	states := func(rows []isolator.Check) []string {
		var s []string
		for _, r := range rows {
			s = append(s, r.Name+"="+r.Status.State.String())
		}
		return s
	}
	for _, tc := range []struct {
		info system.Info
		own  bool
		want []string
	}{
		{rootless, true, []string{"docker rootless=active", "docker rootless limits=warning"}},
		{rootless, false, []string{"docker rootless=unavailable"}},
		{rootful, true, []string{"docker rootless=active"}}, // Docker Desktop's socket is the user's
		{rootful, false, []string{"docker rootless=active"}},
	} {
		got := states(rootlessRows(tc.info, tc.own, "unix:///run/user/1000/docker.sock", 1000))
		if !slices.Equal(got, tc.want) {
			t.Errorf("rootless %v, own %v: rows %v, want %v", len(tc.info.SecurityOptions) > 1, tc.own, got, tc.want)
		}
	}
}

// What a program that asks who it runs as sees on a rootless engine: uid 0, named as
// the user in /etc/passwd with the user's home, HOME and USER the user's, and the
// claude binding's IS_SANDBOX=1 (Claude Code refuses bypass-permissions mode to a
// uid 0 without it). The whole environment of the command, as the engine gets it.
func TestRootlessEnv(t *testing.T) {
	p := basePlan()
	p.Env = append(p.Env, isolator.EnvVar{Name: "USER", Value: "u", FromHost: true})
	for n, v := range tools.Claude().EnvSet(tools.Host{}) {
		p.Env = append(p.Env, isolator.EnvVar{Name: n, Value: v})
	}
	q := asContainerRoot(p, true)
	s, err := containerConfig(q, engineOptions(q, opts))
	if err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(slices.Clone(s.Config.Env), func(e string) bool { return strings.HasPrefix(e, "DEVSANDBOX_INIT=") })
	want := []string{"DEVSANDBOX=1", "HOME=/home/u", "LANG=C.UTF-8", "USER=u", "IS_SANDBOX=1"}
	if s.Config.User != "0:0" || !slices.Equal(env, want) {
		t.Errorf("user %q, env %q; want 0:0 and %q", s.Config.User, env, want)
	}
	var passwd string
	for _, f := range s.Layout.ImageFiles {
		if f.Path == "/etc/passwd" {
			passwd = string(f.Content)
		}
	}
	if want := "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nu:x:0:0:u:/home/u:/bin/sh\n"; passwd != want {
		t.Errorf("/etc/passwd:\n%s\nwant:\n%s", passwd, want)
	}
}
