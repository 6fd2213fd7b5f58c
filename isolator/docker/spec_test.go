package docker

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/sh"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/internal/plantest"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

const (
	home        = plantest.Home
	project     = plantest.Project
	sandboxHome = plantest.SandboxHome
	stateDir    = plantest.StateDir
	emptyFile   = plantest.EmptyFile
)

// basePlan is a plan as Build makes it for a project under the home directory.
func basePlan() *isolator.Plan { return plantest.Base() }

var opts = Options{Image: "devsandbox/default:1.0", Home: "/home/u", Version: "1.0"}

var goldenCases = []struct {
	name string
	plan func() *isolator.Plan
	opts func() Options
}{
	{"minimal", basePlan, nil},
	// The agent: no bind of the relay's socket, a tmpfs of root's where the exec
	// serves it, SSH_AUTH_SOCK in the kept session's exec.
	{"ssh_agent_kept", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.None, SocketDir: "/run/user/1000/devsandbox/p1"}
		p.Proxy.Session = "5e55"
		p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/5e55.sock"}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.SSHAgent.Socket, Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"})
		p.Env = append(p.Env, isolator.EnvVar{Name: "SSH_AUTH_SOCK", Value: "/run/devsandbox/ssh-agent.sock"})
		return p
	}, func() Options {
		o := opts
		o.Keep = true
		return o
	}},
	// docker.agent_bind on a local engine, one-shot: the session relay's socket
	// file alone bound read-only, the init told where to probe it and with which
	// key; the exec stays the fallback. Without the key (every case above) nothing
	// of the agent is bound: the stream.
	{"ssh_agent_bound", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.None, SocketDir: "/run/user/1000/devsandbox/p1"}
		p.Proxy.Session = "5e55"
		p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/5e55.sock"}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.SSHAgent.Socket, Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"})
		p.Env = append(p.Env, isolator.EnvVar{Name: "SSH_AUTH_SOCK", Value: "/run/devsandbox/ssh-agent.sock"})
		return p
	}, func() Options {
		o := opts
		o.BindAgent = true
		o.AgentSocket = "/run/devsandbox/agent/5e55.sock"
		o.AgentBind, o.AgentBindTarget, o.AgentBound = "/run/user/1000/devsandbox/p1/agent/5e55.sock", agentBoundFile, agentBoundFile
		o.AgentKey = []byte("0123456789abcdef0123456789abcdef")
		return o
	}},
	// docker.agent_bind on a local engine, kept: the relays' directory of the kept
	// sessions bound read-only, the init told where to probe it and with which key;
	// the exec stays the fallback.
	{"ssh_agent_bound_kept", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.None, SocketDir: "/run/user/1000/devsandbox/p1"}
		p.Proxy.Session = "5e55"
		p.SSHAgent = isolator.AgentRelay{Upstream: "/tmp/ssh-x/agent.1", Socket: "/run/user/1000/devsandbox/p1/agent/kept/5e55.sock"}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: p.SSHAgent.Socket, Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"})
		p.Env = append(p.Env, isolator.EnvVar{Name: "SSH_AUTH_SOCK", Value: "/run/devsandbox/ssh-agent.sock"})
		return p
	}, func() Options {
		o := opts
		o.Keep, o.BindAgent = true, true
		o.AgentSocket = "/run/devsandbox/agent/5e55.sock"
		o.AgentBind, o.AgentBindTarget, o.AgentBound = "/run/user/1000/devsandbox/p1/agent/kept", agentBoundDir, agentBoundDir+"/5e55.sock"
		o.AgentKey = []byte("0123456789abcdef0123456789abcdef")
		return o
	}},
	{"open_resources_other_home", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Open}
		p.TTY = true
		p.Command = []string{"/bin/bash"}
		p.Limits = isolator.Limits{Pids: 4096, Memory: 2 << 30, CPUs: 1.5}
		p.Tmp.Size = 256 << 20 // sandbox.tmp_size = "256m": the container's tmpfs /tmp
		p.Syscalls = syscalls.Policy{Relax: []syscalls.Group{syscalls.IOURing}}
		return p
	}, func() Options {
		o := opts
		o.Home = "/home/dev"
		return o
	}},
	// proxy.mitm: the CA bundle goes in the image; the script reads it from the host
	// bundle and the CA file's certificate (checked), never printing either.
	{"mitm_bundle", func() *isolator.Plan {
		p := basePlan()
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/run/devsandbox/ca-bundle.pem",
			Content: []byte("SYSTEM CAS\nPROJECT CA\n"), Why: "CA bundle with the proxy's CA (proxy.mitm)",
			Parts: []isolator.ContentPart{{File: "/etc/ssl/certs/ca-certificates.crt"}, {File: stateDir + "/proxy-ca.pem", CertOnly: true}}})
		// The leak scan below: the CA's key, which the proxy gets, is in neither output.
		p.HostEnv = map[string]string{isolator.ProxyCAVar: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}
		return p
	}, nil},
	{"mount_kinds", func() *isolator.Plan {
		p := basePlan()
		p.Mounts = append(p.Mounts,
			isolator.Mount{Kind: isolator.Bind, Source: home + "/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true, Why: "tool git"},
			isolator.Mount{Kind: isolator.Bind, Source: home + "/.cache/go", HomeRel: ".cache/go", Optional: true, Why: "tool go"},
			isolator.Mount{Kind: isolator.Data, HomeRel: ".ssh/config", Content: []byte("Host *\n"), Why: "tool ssh"},
			isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws", Why: "sandbox.hide_paths"},
			isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env", Why: "sandbox.mask_files"},
			isolator.Mount{Kind: isolator.TmpDir, Dest: project + "/node_modules/.cache", Why: "tool node"},
		)
		return p
	}, nil},
	{"later_mount_covers_earlier", func() *isolator.Plan {
		p := basePlan()
		p.Mounts = append(p.Mounts,
			isolator.Mount{Kind: isolator.Bind, Source: home + "/.config/gh", HomeRel: ".config/gh", Why: "tool gh"},
			isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".config", Why: "sandbox.hide_paths"},
			isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env", Why: "first"},
			isolator.Mount{Kind: isolator.Bind, Source: "/srv/env", Dest: project + "/.env", ReadOnly: true, Why: "same path, later wins"},
		)
		return p
	}, nil},
	{"secrets", func() *isolator.Plan {
		p := basePlan()
		p.Secrets = []isolator.Secret{
			{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
			{Name: "DB_PASS", FileSource: "/home/u/secrets/db pass", AsFile: true},
			{Name: "NPM_TOKEN", EnvSource: "NPM_TOKEN", AsFile: true},
		}
		p.HostEnv = map[string]string{"API_TOKEN": "never-printed-1", "NPM_TOKEN": "never-printed-2"}
		return p
	}, nil},
	{"kept", basePlan, func() Options {
		o := opts
		o.Keep = true
		return o
	}},
	{"allowlist_publish", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Allowlist, Proxy: egress.Endpoint{Unix: "/run/user/1000/devsandbox/0123abcd/proxy-s1.sock"},
			Allow:      []egress.Entry{mustEntry("192.0.2.7:443")},
			Forwards:   []egress.Forward{{HostPort: 8080, SandboxPort: 3000}},
			SocketDir:  "/run/user/1000/devsandbox/0123abcd",
			PublishDir: "/run/user/1000/devsandbox/0123abcd/publish-s1"}
		p.Proxy.Session = "s1"
		return p
	}, nil},
	{"kept_proxy_publish", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/user/1000/devsandbox/0123abcd/proxy-s1.sock"},
			Forwards:   []egress.Forward{{HostPort: 8080, SandboxPort: 3000}},
			SocketDir:  "/run/user/1000/devsandbox/0123abcd",
			PublishDir: "/run/user/1000/devsandbox/0123abcd/publish-s1"}
		p.Proxy.Session = "s1"
		return p
	}, func() Options {
		o := opts
		o.Keep = true
		return o
	}},
	// A rootless engine's (rootless.go): the command, the keeper and the session's
	// exec as the container's root (the user on the host), the sandbox's tmpfs
	// mounts and /etc/passwd with it, the init told to check that uid 0 is not the
	// host's; labels keep the user's uid.
	{"rootless_kept_proxy", func() *isolator.Plan {
		p := basePlan()
		p.User.ContainerRoot = true
		p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/user/1000/devsandbox/0123abcd/proxy-s1.sock"},
			SocketDir: "/run/user/1000/devsandbox/0123abcd"}
		p.Proxy.Session = "s1"
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws"})
		return p
	}, func() Options {
		o := opts
		o.Keep = true
		return o
	}},
	{"anchored_mask", anchoredPlan, nil},
	{"anchored_mask_subpath", anchoredPlan, func() Options {
		o := opts
		o.Subpath = true
		return o
	}},
	{"anchored_mask_pinned", anchoredPlan, func() Options {
		o := opts
		o.Anchors = map[string]string{project + "/sub": "/proc/$DEVSANDBOX_PID/fd/N"}
		return o
	}},
	{"home_volume", basePlan, func() Options {
		o := opts
		o.HomeVolume, o.InitSource = "devsandbox-app-0123abcd-home", "/home/u/.local/state/devsandbox/init-0a1b2c3d4e5f-linux-arm64"
		return o
	}},
}

// anchoredPlan masks sub/.env in the project, with sub bound onto itself first (an
// anchor, package planner).
func anchoredPlan() *isolator.Plan {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: project + "/sub", Dest: project + "/sub", Why: "holds a masked or protected path", Anchor: true},
		isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/sub/.env", Why: "sandbox.mask_files"},
	)
	return p
}

// An anchor is never a bind by path: the engine's local driver mounts the directory
// Run pinned (its /proc/PID/fd/N), and an anchor not pinned fails the render; the
// spec's hash does not depend on the descriptor (a kept container is reused).
func TestAnchorMountsPinnedDirectory(t *testing.T) {
	o := opts
	o.Anchors = map[string]string{project + "/sub": "/proc/42/fd/7"}
	s, err := containerConfig(anchoredPlan(), o)
	if err != nil {
		t.Fatal(err)
	}
	var got []mount.Mount
	for _, m := range s.Host.Mounts {
		if m.Target == project+"/sub" {
			got = append(got, m)
		}
	}
	want := []mount.Mount{{Type: mount.TypeVolume, Target: project + "/sub", VolumeOptions: &mount.VolumeOptions{
		NoCopy: true, Labels: map[string]string{LabelAnchor: project + "/sub"},
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{"type": "none", "o": "bind", "device": "/proc/42/fd/7"}},
	}}}
	if a, b := mustJSON(t, got), mustJSON(t, want); a != b {
		t.Fatalf("the anchor's mount:\n%s\nwant\n%s", a, b)
	}
	if !s.Anchored {
		t.Error("Spec.Anchored not set")
	}
	o.Anchors[project+"/sub"] = "/proc/43/fd/9"
	s2, err := containerConfig(anchoredPlan(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hash != s2.Hash {
		t.Errorf("the spec hash depends on the descriptor: %s, %s", s.Hash, s2.Hash)
	}
	o.Anchors = map[string]string{}
	if _, err := containerConfig(anchoredPlan(), o); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("an anchor not pinned: %v, want ErrProtection", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRenderGolden compares the rendered container spec and the docker CLI script
// with testdata/NAME.{spec,script}.golden (go test -update rewrites them).
func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.opts != nil {
				o = tc.opts()
			}
			p := tc.plan()
			s, err := containerConfig(p, engineOptions(p, o))
			if err != nil {
				t.Fatal(err)
			}
			// The seccomp profile has golden files of its own (package syscalls).
			profile := syscalls.OCIJSON(syscalls.Compile(p.Syscalls))
			hc := *s.Host
			hc.SecurityOpt = nil
			for _, o := range s.Host.SecurityOpt {
				if o == "seccomp="+string(profile) {
					o = "seccomp=<the OCI profile of the policy " + p.Syscalls.String() + ">"
				}
				hc.SecurityOpt = append(hc.SecurityOpt, o)
			}
			if s.Profile == nil || string(s.Profile.Content) != string(profile) {
				t.Errorf("the script's profile file does not hold the policy's profile")
			}
			spec, _ := json.MarshalIndent(struct {
				Name    string
				Config  any
				Host    any
				Exec    any
				Hash    string
				Files   []container.HostFile
				Image   []string
				Secrets []isolator.Secret
			}{s.Name, s.Config, &hc, s.Exec, s.Hash, s.Layout.Files, imageFiles(s.Layout), s.Layout.Secrets}, "", "  ")
			golden(t, tc.name+".spec.golden", string(spec)+"\n")
			golden(t, tc.name+".script.golden", strings.ReplaceAll(s.Script(), sh.Quote(string(profile)), "'<the OCI profile of the policy "+p.Syscalls.String()+">'"))
			for _, v := range p.HostEnv {
				if strings.Contains(string(spec)+s.Script(), v) {
					t.Errorf("secret value %q rendered", v)
				}
			}
			again, _ := containerConfig(tc.plan(), engineOptions(p, o))
			if again.Hash != s.Hash {
				t.Errorf("hash not stable: %s then %s", s.Hash, again.Hash)
			}
		})
	}
}

// imageFiles are what l puts in the derived image, as "PATH: CONTENT".
func imageFiles(l *container.Layout) []string {
	var out []string
	for _, f := range l.ImageFiles {
		out = append(out, f.Path+": "+string(f.Content))
	}
	return out
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// A hidden directory is an empty read-only tmpfs owned by the sandbox user: runc gives
// a tmpfs the mode of the directory it covers (0700 for ~/.ssh, ~/.gnupg), so a
// root-owned mask of such a directory could not even be listed, and the init, which
// lists it, would stop every run.
func TestMaskDirOwned(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: home + "/shared", Dest: home + "/shared"},
		isolator.Mount{Kind: isolator.MaskDir, Dest: home + "/shared/a/secret"},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws"},
	)
	s, err := containerConfig(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range s.Host.Mounts {
		if m.Type == mount.TypeTmpfs {
			t.Errorf("tmpfs %s in Mounts (the API of engines before 1.46 cannot set its owner)", m.Target)
		}
	}
	const want = "ro,nosuid,nodev,noexec,size=4k,mode=755,uid=1000,gid=1000"
	for _, dst := range []string{home + "/shared/a/secret", "/home/u/.aws"} {
		if got := s.Host.Tmpfs[dst]; got != want {
			t.Errorf("mask %s: tmpfs options %q, want %q", dst, got, want)
		}
	}
}

// The sandbox home and every home-relative mount land under docker.home, wherever the
// host home is: the remap the issue asks to prove.
func TestHomeRemap(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: home + "/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".ssh"},
	)
	o := opts
	o.Home = "/home/dev"
	s, err := containerConfig(p, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range s.Host.Mounts {
		got[m.Target] = string(m.Type) + ":" + m.Source
	}
	for dst := range s.Host.Tmpfs {
		got[dst] = "tmpfs:"
	}
	want := map[string]string{
		"/home/dev":            "bind:" + sandboxHome,
		"/home/dev/.gitconfig": "bind:" + home + "/.gitconfig",
		"/home/dev/.ssh":       "tmpfs:",
		project:                "bind:" + project, // the project keeps its host path
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mount at %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got[home]; ok {
		t.Errorf("something is still mounted at the host home %s", home)
	}
}

// Every protection the container gets is in the init's manifest, so the init checks it.
func TestManifestCoversProtections(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env"},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws"},
	)
	s, err := containerConfig(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	var m *wire.Manifest
	for _, e := range s.Config.Env {
		if v, ok := strings.CutPrefix(e, wire.ManifestEnv+"="); ok {
			m, _ = wire.DecodeManifest(v)
		}
	}
	if m == nil || m.Network != "none" || m.SecretDir != isolator.SecretDir {
		t.Fatalf("manifest: %+v", m)
	}
	checked := map[string]wire.CheckKind{}
	for _, c := range m.Checks {
		checked[c.Path] = c.Kind
	}
	for _, mt := range s.Host.Mounts {
		want := wire.CheckRW
		switch {
		case mt.Source == emptyFile:
			want = wire.CheckMaskFile
		case filepath.Dir(mt.Source) == stateDir+"/docker":
			want = wire.CheckData
		case mt.ReadOnly:
			want = wire.CheckRO
		}
		if checked[mt.Target] != want {
			t.Errorf("mount %s: check %q, want %q", mt.Target, checked[mt.Target], want)
		}
	}
	masks := 0
	for dst, o := range s.Host.Tmpfs {
		if strings.HasPrefix(o, "ro,") {
			masks++
			if checked[dst] != wire.CheckMaskDir {
				t.Errorf("tmpfs %s: check %q, want %q", dst, checked[dst], wire.CheckMaskDir)
			}
		}
	}
	if masks != 1 {
		t.Errorf("%d masked directories rendered, want 1 (~/.aws): %v", masks, s.Host.Tmpfs)
	}
}

func TestEgressModesOnDocker(t *testing.T) {
	for _, m := range []egress.Mode{egress.Proxy, egress.Allowlist} {
		p := basePlan()
		p.Egress = egress.Rules{Mode: m}
		if _, err := containerConfig(p, opts); err == nil || !strings.Contains(err.Error(), "proxy's Unix socket") {
			t.Errorf("egress %s without the proxy: %v, want an error naming the socket", m, err)
		}
	}
}

// A kept container's spec does not change from session to session (the socket and
// publish paths differ), but changes with the egress policy.
func TestKeptSpecStableAcrossSessions(t *testing.T) {
	o := opts
	o.Keep = true
	session := func(id string, allow ...string) *Spec {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/x/proxy-" + id + ".sock"}, SocketDir: "/run/x",
			PublishDir: "/run/x/publish-" + id, Forwards: []egress.Forward{{HostPort: 1, SandboxPort: 2}}}
		for _, a := range allow {
			p.Egress.Allow = append(p.Egress.Allow, mustEntry(a))
		}
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := session("s1"), session("s2"), session("s3", "example.com")
	if a.Hash != b.Hash {
		t.Errorf("two sessions with one configuration: spec %s and %s", a.Hash, b.Hash)
	}
	if a.Hash == c.Hash {
		t.Errorf("another egress policy kept the spec %s", a.Hash)
	}
	if strings.Join(a.Exec.Env, " ") == strings.Join(b.Exec.Env, " ") {
		t.Errorf("the sessions' execs do not name their own published ports")
	}

	// Allowlist names resolve elsewhere from session to session: the spec stays, the
	// kept /etc/hosts is rewritten, and the rules (FirewallArg) follow.
	allowlist := func(addr string) *Spec {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Allowlist, Proxy: egress.Endpoint{Unix: "/run/x/proxy-s.sock"}, SocketDir: "/run/x",
			Allow:    []egress.Entry{mustEntry("example.com:443")},
			Resolved: []egress.Resolved{{Host: "example.com", Addrs: []netip.Addr{netip.MustParseAddr(addr)}}}}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/hosts", Content: []byte(addr + " example.com\n"), Volatile: true})
		p.Proxy.Session = "s"
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	x, y := allowlist("192.0.2.1"), allowlist("192.0.2.2")
	if x.Hash != y.Hash {
		t.Errorf("new addresses for an allowed name changed the kept spec: %s, %s", x.Hash, y.Hash)
	}
	if x.FirewallArg == y.FirewallArg {
		t.Errorf("new addresses left the rules as they were")
	}
	var hosts *container.HostFile
	for i, f := range y.Layout.Files {
		if f.InPlace {
			hosts = &y.Layout.Files[i]
		}
	}
	if hosts == nil || string(hosts.Content) != "192.0.2.2 example.com\n" {
		t.Errorf("kept /etc/hosts: %+v", hosts)
	}

	// Shipped (every run): the file is an engine-side volume's, which the session's
	// firewall helper rewrites; nothing is written on the host.
	o.Shipped, o.EndpointVolume = true, "devsandbox-app-0123abcd-ep"
	x, y = allowlist("192.0.2.1"), allowlist("192.0.2.2")
	if x.Hash != y.Hash {
		t.Errorf("shipped: new addresses for an allowed name changed the kept spec: %s, %s", x.Hash, y.Hash)
	}
	if len(y.Layout.Files) != 0 {
		t.Errorf("shipped: host files %+v", y.Layout.Files)
	}
	args, vols := firewallArgs(basePlan(), y)
	want := wire.WriteInPlaceArg + "/v/0/content=" + base64.StdEncoding.EncodeToString([]byte("192.0.2.2 example.com\n"))
	if len(args) != 2 || args[1] != want || len(vols) != 1 || vols[0] != volatileVolume("app-0123abcd", "/etc/hosts") {
		t.Errorf("shipped: the firewall helper's arguments %q, volumes %q", args, vols)
	}
}

func mustEntry(s string) egress.Entry {
	e, err := egress.ParseEntry(s)
	if err != nil {
		panic(err)
	}
	return e
}

// TestSpecHashFollowsProfile: the kept container's spec hash counts the seccomp
// profile (by its digest), so a changed syscall policy makes a new container; and
// hashing leaves the HostConfig the engine gets as it was.
func TestSpecHashFollowsProfile(t *testing.T) {
	o := opts
	o.Keep = true
	hash := func(pol syscalls.Policy) string {
		p := basePlan()
		p.Syscalls = pol
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		return s.Hash
	}
	relaxed, err := syscalls.New([]string{syscalls.GroupNames()[0]})
	if err != nil {
		t.Fatal(err)
	}
	strict, loose, none := hash(syscalls.Policy{}), hash(relaxed), hash(syscalls.Policy{Unfiltered: true})
	if strict == loose || strict == none || loose == none {
		t.Errorf("spec hashes: strict %s, relaxed %s, unfiltered %s; want three", strict, loose, none)
	}

	cfg := &dockercontainer.Config{Image: "x"}
	one := &dockercontainer.HostConfig{SecurityOpt: []string{"no-new-privileges", `seccomp={"defaultAction":"SCMP_ACT_ERRNO"}`}}
	other := &dockercontainer.HostConfig{SecurityOpt: []string{"no-new-privileges", `seccomp={"defaultAction":"SCMP_ACT_KILL"}`}}
	if specHash(cfg, one) == specHash(cfg, other) {
		t.Errorf("two profiles, one spec hash")
	}
	if one.SecurityOpt[1] != `seccomp={"defaultAction":"SCMP_ACT_ERRNO"}` {
		t.Errorf("specHash changed the HostConfig's SecurityOpt: %q", one.SecurityOpt)
	}
}

// An engine older than API 1.45 that does not share this host's files gets no anchor
// by path: the run is refused, naming the directory, the mask, the engine and its
// API version. A newer one mounts sub-paths, and an older local one the directories
// pinned: neither is refused.
func TestUnpinnableRefused(t *testing.T) {
	remote := Address{Host: "tcp://10.0.0.2:2376", Origin: "docker.host"}
	err := remote.RefuseAnchors(anchoredPlan(), "1.44")
	if !errors.Is(err, isolator.ErrProtection) {
		t.Fatalf("got %v, want ErrProtection", err)
	}
	for _, w := range []string{project + "/sub holds", project + "/sub/.env, sandbox.mask_files", "tcp://10.0.0.2:2376 (docker.host) speaks API 1.44, older than 1.45", "Docker 26"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not name %q: %v", w, err)
		}
	}
	if err := remote.RefuseAnchors(anchoredPlan(), ""); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("an unknown API version: %v, want the refusal", err)
	}
	for _, v := range []string{"1.45", "1.51", "2.0"} {
		if err := remote.RefuseAnchors(anchoredPlan(), v); err != nil {
			t.Errorf("API %s: %v", v, err)
		}
	}
	if err := (Address{Host: "unix:///var/run/docker.sock"}).RefuseAnchors(anchoredPlan(), "1.41"); err != nil {
		t.Errorf("a local engine (pins): %v", err)
	}
	if err := remote.RefuseAnchors(basePlan(), "1.41"); err != nil {
		t.Errorf("a plan without anchors: %v", err)
	}
	ro := anchoredPlan()
	for i := range ro.Mounts {
		ro.Mounts[i].ReadOnly = ro.Mounts[i].ReadOnly || ro.Mounts[i].Anchor
	}
	if err := remote.RefuseAnchors(ro, "1.41"); err != nil {
		t.Errorf("a read-only anchor (delivered as content): %v", err)
	}
}

// A read-only anchor (the git hooks) is made read-only by the local driver's own
// mount, not by the Mount's ReadOnly, which an engine refuses on an anonymous volume;
// the script quotes the option's comma for --mount's CSV.
func TestReadOnlyAnchorMount(t *testing.T) {
	m := anchorMount(container.Mount{Type: container.Bind, Source: project + "/.git/hooks", Target: project + "/.git/hooks", ReadOnly: true, Anchor: true}, "/proc/42/fd/7")
	if m.ReadOnly || m.VolumeOptions.DriverConfig.Options["o"] != "bind,ro" {
		t.Errorf("ReadOnly %v, o=%q; want false, bind,ro", m.ReadOnly, m.VolumeOptions.DriverConfig.Options["o"])
	}
	want := `type=volume,dst=` + project + `/.git/hooks,volume-nocopy,volume-label=dev.devsandbox.anchor=` + project + `/.git/hooks,volume-driver=local,volume-opt=device=/proc/42/fd/7,"volume-opt=o=bind,ro",volume-opt=type=none`
	if got := mountFlag(m); got != want {
		t.Errorf("mountFlag:\n%s\nwant\n%s", got, want)
	}
}

// TestContainerKeepsImagePath: the Plan's PATH (the host's, or one set with -e) never
// reaches the container, neither in a run's nor in a kept container's exec
// environment, nor in --dry-run's script: the image's PATH applies. The host's PATH
// names host directories (~/.local/bin, /opt/homebrew/bin on a Mac behind Docker
// Desktop) that the image does not have, or has with other programs, and it would
// override the ENV PATH the image was built with, so its own programs would not be found.
func TestContainerKeepsImagePath(t *testing.T) {
	for _, keep := range []bool{false, true} {
		for _, fromHost := range []bool{true, false} {
			p := basePlan()
			for i, e := range p.Env {
				if e.Name == "PATH" {
					p.Env[i] = isolator.EnvVar{Name: "PATH", Value: "/host/only/bin:/usr/bin", FromHost: fromHost}
				}
			}
			o := opts
			o.Keep = keep
			s, err := containerConfig(p, o)
			if err != nil {
				t.Fatal(err)
			}
			envs := [][]string{s.Config.Env} // the container's; a kept one's exec has the command's
			if s.Exec != nil {
				envs = append(envs, s.Exec.Env)
			}
			command := envs[len(envs)-1]
			for _, env := range envs {
				if name := pathIn(env); name != "" {
					t.Errorf("keep=%v fromHost=%v: %s in the container's environment %q", keep, fromHost, name, env)
				}
			}
			if !slices.Contains(command, "LANG=C.UTF-8") {
				t.Errorf("keep=%v: the Plan's other variables are missing too (%q), so the check above proves nothing", keep, command)
			}
			script := s.Script()
			if name := pathIn(strings.Fields(script)); name != "" || strings.Contains(script, "/host/only/bin") {
				t.Errorf("keep=%v fromHost=%v: the --dry-run script sets PATH (%q):\n%s", keep, fromHost, name, script)
			}
		}
	}
}

// pathIn returns the first of words that sets PATH in an environment ("PATH=…", or a
// bare "PATH" passed from the host), quoted or not; "" when none does.
func pathIn(words []string) string {
	for _, w := range words {
		w = strings.TrimLeft(w, `'"`)
		if w == "PATH" || strings.HasPrefix(w, "PATH=") || strings.HasPrefix(w, "PATH'") {
			return w
		}
	}
	return ""
}

// The renderer refuses a containers' home inside the host home while the project, below
// the host home, is shown at its host path (container.Lay; config refuses the same
// docker.home on load, a library caller's Options never passed there).
func TestHomeInsideHostHomeRefused(t *testing.T) {
	o := opts
	o.Home = home + "/box"
	if _, err := containerConfig(basePlan(), o); !errors.Is(err, isolator.ErrConfig) || !strings.Contains(err.Error(), "set docker.home to "+home+",") {
		t.Fatalf("got %v, want ErrConfig naming the fix", err)
	}
}
