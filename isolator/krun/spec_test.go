package krun

import (
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containers/podman/v5/pkg/specgen"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/sh"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/internal/plantest"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
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

var opts = Options{Image: "devsandbox/default:1.0", Runtime: "krun", CPUs: 2, MemoryMiB: 2048, Home: "/home/u", Version: "1.0", NofileHard: 20000, Binaries: egress.DefaultBinaries}

// hostsFile is the /etc/hosts planner.Build gives an allowlist run: the host's, then
// the names resolved at launch.
const hostsFile = "127.0.0.1 localhost\n# resolved by devsandbox at launch (egress allowlist)\n203.0.113.7 api.example.test\n"

// allowlistPlan is an allowlist run as planner.Build makes it: an address, a resolved
// name (with its /etc/hosts), a denied range, the session proxy's socket.
func allowlistPlan() *isolator.Plan {
	p := basePlan()
	allow, _ := egress.ParseEntries([]string{"10.231.7.2:8080", "api.example.test:443", "*.wild.test"})
	deny, _ := egress.ParseEntries([]string{"10.231.7.0/24"})
	p.Egress = egress.Rules{
		Mode:     egress.Allowlist,
		Proxy:    egress.Endpoint{Unix: "/run/user/1000/devsandbox/proxy-ab12.sock"},
		Allow:    allow,
		Deny:     deny,
		Resolved: []egress.Resolved{{Host: "api.example.test", Port: 443, Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.7")}}},
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/hosts", Content: []byte(hostsFile), Why: "egress allowlist names"})
	return p
}

// withPublish adds published ports (--publish 8000:3000 --publish 9229).
func withPublish(p *isolator.Plan) *isolator.Plan {
	p.Egress.Forwards = []egress.Forward{{HostPort: 8000, SandboxPort: 3000}, {HostPort: 9229, SandboxPort: 9229}}
	p.Egress.PublishDir = "/run/user/1000/devsandbox/app-0123abcd/publish-ab12"
	return p
}

var goldenCases = []struct {
	name string
	plan func() *isolator.Plan
	opts func() Options
}{
	{"minimal", basePlan, nil},
	{"runc_open_tty_other_home", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Open}
		p.TTY = true
		p.Command = []string{"/bin/bash"}
		p.Limits = isolator.Limits{Pids: 8192, Memory: 512 << 20, CPUs: 0.5}
		return p
	}, func() Options {
		o := opts
		o.Runtime, o.Home, o.NofileHard, o.NprocHard = "runc", "/home/dev", 0, 4096
		return o // limits.pids above the host's hard limit: lowered to it
	}},
	{"vm_size", func() *isolator.Plan {
		p := basePlan()
		p.Limits = isolator.Limits{Pids: 4096, Memory: 8192 << 20, CPUs: 4}
		p.Tmp.Size = 256 << 20 // sandbox.tmp_size = "256m": the VM's tmpfs /tmp
		p.Syscalls = syscalls.Policy{Relax: []syscalls.Group{syscalls.Perf}}
		return p // the VM's size is the memory and CPU limit: no cgroup; the init loads the policy
	}, func() Options {
		o := opts
		o.CPUs, o.MemoryMiB = 4, 8192
		return o
	}},
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
	{"secrets_proxy", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/run/user/1000/devsandbox/proxy-ab12.sock"}}
		p.Secrets = []isolator.Secret{
			{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
			{Name: "DB_PASS", FileSource: "/home/u/secrets/db pass", AsFile: true},
			{Name: "NPM_TOKEN", EnvSource: "NPM_TOKEN", AsFile: true},
		}
		p.HostEnv = map[string]string{"API_TOKEN": "never-printed-1", "NPM_TOKEN": "never-printed-2"}
		return p
	}, nil},
	{"allowlist_runc", allowlistPlan, func() Options {
		o := opts
		o.Runtime = "runc"
		return o
	}},
	{"allowlist_publish_vm", func() *isolator.Plan { return withPublish(allowlistPlan()) }, nil},
	{"publish_open", func() *isolator.Plan {
		p := withPublish(basePlan())
		p.Egress.Mode = egress.Open
		return p
	}, nil},
}

// TestRenderGolden compares the rendered SpecGenerator and the podman CLI script with
// testdata/NAME.{spec,script}.golden (go test -update rewrites them).
func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.opts != nil {
				o = tc.opts()
			}
			p := tc.plan()
			s, err := specGen(p, o)
			if err != nil {
				t.Fatal(err)
			}
			// The seccomp profile has golden files of its own (package syscalls).
			profile := string(syscalls.OCIJSON(syscalls.Compile(p.Syscalls)))
			marker := "<the OCI profile of the policy " + p.Syscalls.String() + ">"
			var files []container.HostFile
			for _, f := range s.Layout.Files {
				if string(f.Content) == profile {
					f.Content = []byte(marker)
				}
				files = append(files, f)
			}
			spec, _ := json.MarshalIndent(struct {
				Gen      any
				Files    []container.HostFile
				Secrets  []isolator.Secret
				Firewall []egress.Call `json:",omitempty"`
			}{s.Gen, files, s.Layout.Secrets, s.Firewall}, "", "  ")
			golden(t, tc.name+".spec.golden", string(spec)+"\n")
			golden(t, tc.name+".script.golden", strings.ReplaceAll(s.Script(), sh.Quote(profile), "'"+marker+"'"))
			for _, v := range p.HostEnv {
				if strings.Contains(string(spec)+s.Script(), v) {
					t.Errorf("secret value %q rendered", v)
				}
			}
			again, _ := specGen(tc.plan(), o)
			b1, _ := json.Marshal(s.Gen)
			b2, _ := json.Marshal(again.Gen)
			if string(b1) != string(b2) {
				t.Errorf("specGen is not deterministic")
			}
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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

// The sandbox home and home-relative mounts land under docker.home; the project keeps
// its host path.
func TestHomeRemap(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: home + "/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".ssh"},
	)
	o := opts
	o.Home = "/home/dev"
	s, err := specGen(p, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range s.Gen.Mounts {
		got[m.Destination] = m.Type + ":" + m.Source
	}
	want := map[string]string{
		"/home/dev":            "bind:" + sandboxHome,
		"/home/dev/.gitconfig": "bind:" + home + "/.gitconfig",
		"/home/dev/.ssh":       "tmpfs:tmpfs",
		project:                "bind:" + project,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mount at %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got[home]; ok {
		t.Errorf("something is still mounted at the host home %s", home)
	}
	if s.Gen.Env["HOME"] != "/home/dev" {
		t.Errorf("HOME = %q", s.Gen.Env["HOME"])
	}
}

// Every protection is in the init's manifest, so the init checks it: in a microVM the
// guest sees host files through virtio-fs, which can fail open.
func TestManifestCoversProtections(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env"},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws"},
		isolator.Mount{Kind: isolator.Data, HomeRel: ".ssh/config", Content: []byte("x")},
	)
	s, err := specGen(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeManifest(s.Gen.Env[wire.ManifestEnv])
	if err != nil || m.Network != "none" || m.SecretDir != isolator.SecretDir || !m.ProbeReadOnly {
		t.Fatalf("manifest: %+v %v", m, err)
	}
	checked := map[string]wire.CheckKind{}
	for _, c := range m.Checks {
		checked[c.Path] = c.Kind
	}
	for _, mt := range s.Gen.Mounts {
		ro := false
		for _, o := range mt.Options {
			ro = ro || o == "ro"
		}
		var want wire.CheckKind
		switch {
		case mt.Destination == VMConfigPath, mt.Type == "tmpfs" && !ro:
			continue // read by crun before the VM starts; writable scratch
		case mt.Type == "tmpfs":
			want = wire.CheckMaskDir
		case mt.Source == emptyFile:
			want = wire.CheckMaskFile
		case filepath.Dir(mt.Source) == stateDir+"/krun":
			want = wire.CheckData
		case ro:
			want = wire.CheckRO
		default:
			want = wire.CheckRW
		}
		if checked[mt.Destination] != want {
			t.Errorf("mount %s: check %q, want %q", mt.Destination, checked[mt.Destination], want)
		}
	}
}

// A hidden directory is an empty tmpfs, not a copy of what it hides: podman adds
// tmpcopyup to every tmpfs mount unless told notmpcopyup, and the runtime (runc,
// crun) then copies the host directory's files into the mask. Scratch tmpfs mounts
// keep podman's default (the image's /tmp and /run content). The mask is the sandbox
// user's ("U"): runc gives a tmpfs the mode of the directory it covers (0700 for
// ~/.ssh), and the init must be able to list it.
func TestMaskDirOptions(t *testing.T) {
	p := basePlan()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: home + "/shared", Dest: home + "/shared"},
		isolator.Mount{Kind: isolator.MaskDir, Dest: home + "/shared/a/secret"},
		isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".aws"},
	)
	for _, o := range []Options{opts, func() Options { o := opts; o.Runtime = "runc"; return o }()} {
		s, err := specGen(p, o)
		if err != nil {
			t.Fatal(err)
		}
		masks := 0
		for _, m := range s.Gen.Mounts {
			if m.Type != "tmpfs" || !slices.Contains(m.Options, "ro") {
				if slices.Contains(m.Options, "notmpcopyup") {
					t.Errorf("runtime %s: %s mount %s has notmpcopyup: %q", o.Runtime, m.Type, m.Destination, m.Options)
				}
				continue
			}
			masks++
			want := []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=755", "U", "notmpcopyup"}
			if !reflect.DeepEqual(m.Options, want) {
				t.Errorf("runtime %s: mask %s has options %q, want %q", o.Runtime, m.Destination, m.Options, want)
			}
		}
		if masks != 2 {
			t.Errorf("runtime %s: %d masks rendered, want 2 (%s/shared/a/secret, /home/u/.aws)", o.Runtime, masks, home)
		}
	}
}

// The VM's size reaches crun (the file) and youki (annotations); runc gets neither,
// and no /dev/kvm.
func TestVMResources(t *testing.T) {
	s, err := specGen(basePlan(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var vm string
	for _, f := range s.Layout.Files {
		for _, m := range s.Gen.Mounts {
			if m.Destination == VMConfigPath && m.Source == f.Path {
				vm = string(f.Content)
			}
		}
	}
	if vm != `{"cpus":2,"ram_mib":2048}`+"\n" {
		t.Errorf("%s = %q", VMConfigPath, vm)
	}
	a := s.Gen.Annotations
	if a[HandlerAnnotation] != "krun" || a[CPUsAnnotation] != "2" || a[RAMAnnotation] != "2048" || s.Gen.OCIRuntime != "krun" {
		t.Errorf("annotations %v, runtime %q", a, s.Gen.OCIRuntime)
	}
	if len(s.Gen.Devices) != 1 || s.Gen.Devices[0].Path != "/dev/kvm" {
		t.Errorf("devices %v", s.Gen.Devices)
	}
	o := opts
	o.Runtime = "runc"
	s, _ = specGen(basePlan(), o)
	if len(s.Gen.Annotations) != 0 || len(s.Gen.Devices) != 0 {
		t.Errorf("runc got %v %v", s.Gen.Annotations, s.Gen.Devices)
	}
	o = opts
	o.CPUs = 17
	if _, err := specGen(basePlan(), o); err == nil {
		t.Error("17 vCPUs accepted (libkrun's limit is 16)")
	}
}

// Allowlist: podman's network with a route out, the proxy forwarded, the rules
// applied from the host (Firewall), the names in /etc/hosts; the init checks the
// rules with the probe under runc, and not in a VM, whose loopback is the guest's.
func TestAllowlist(t *testing.T) {
	for _, rt := range []string{"runc", "krun"} {
		o := opts
		o.Runtime = rt
		s, err := specGen(allowlistPlan(), o)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.DecodeManifest(s.Gen.Env[wire.ManifestEnv])
		if err != nil {
			t.Fatal(err)
		}
		wantProbe := map[string]string{"runc": egress.ProbeAddr, "krun": ""}[rt]
		if m.Network != "firewall" || m.EgressProbe != wantProbe || m.Forward != egress.SandboxProxyAddr+"="+ProxySocket {
			t.Errorf("%s: manifest network %q probe %q forward %q", rt, m.Network, m.EgressProbe, m.Forward)
		}
		if s.Gen.NetNS.NSMode != specgen.Default {
			t.Errorf("%s: network %q, want podman's default (a route out)", rt, s.Gen.NetNS.NSMode)
		}
		want, err := egress.NsenterCalls(allowlistPlan().Egress, egress.Target{UserFD: userNSFD, NetFD: netNSFD}, egress.DefaultBinaries)
		if err != nil || !reflect.DeepEqual(s.Firewall, want) {
			t.Errorf("%s: firewall calls %+v, want %+v (%v)", rt, s.Firewall, want, err)
		}
		hosts := ""
		for _, mt := range s.Gen.Mounts {
			for _, f := range s.Layout.Files {
				if mt.Destination == "/etc/hosts" && mt.Source == f.Path {
					hosts = string(f.Content)
				}
			}
		}
		if !strings.HasSuffix(hosts, allowlistPlan().Egress.HostsFile()) || allowlistPlan().Egress.HostsFile() == "" {
			t.Errorf("%s: /etc/hosts %q lacks the resolved names", rt, hosts)
		}
	}
	// Names not resolved at launch have no firewall form: the render fails.
	p := allowlistPlan()
	p.Egress.Resolved = nil
	if _, err := specGen(p, opts); err == nil || !strings.Contains(err.Error(), "not resolved") {
		t.Errorf("unresolved name: %v", err)
	}
	p = allowlistPlan()
	p.Egress.Proxy = egress.Endpoint{}
	if _, err := specGen(p, opts); err == nil {
		t.Error("allowlist without the proxy socket rendered")
	}
}

// Published ports: the publish directory bound read-write, one socket per port.
func TestPublish(t *testing.T) {
	s, err := specGen(withPublish(basePlan()), opts)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := wire.DecodeManifest(s.Gen.Env[wire.ManifestEnv])
	if want := []string{"3000=/run/devsandbox/publish/3000.sock", "9229=/run/devsandbox/publish/9229.sock"}; !reflect.DeepEqual(m.Publish, want) {
		t.Errorf("manifest publish %q, want %q", m.Publish, want)
	}
	var found bool
	for _, mt := range s.Gen.Mounts {
		if mt.Destination == PublishDir {
			found = mt.Source == withPublish(basePlan()).Egress.PublishDir && reflect.DeepEqual(mt.Options, []string{"rbind", "rw"})
		}
	}
	if !found {
		t.Errorf("the publish directory is not bound read-write at %s: %+v", PublishDir, s.Gen.Mounts)
	}
	p := withPublish(basePlan())
	p.Egress.PublishDir = ""
	if _, err := specGen(p, opts); err == nil {
		t.Error("published ports without a publish directory rendered")
	}
}

func TestRefusals(t *testing.T) {
	b := &Isolator{Settings: helper.Settings{KeepContainer: true, Runtime: "krun", Image: "x"}}
	if _, err := b.Render(basePlan()); !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), "exec'd into") {
		t.Errorf("keep_container: %v", err)
	}
}

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct {
		cfg, rt string
		uid     int
		key     string
		want    string
	}{
		{"unix:///srv/podman.sock", "/run/user/1000", 1000, "", "/srv/podman.sock"},
		{"unix:///srv/podman.sock", "/run/user/1000", 1000, "0a1b2c3d", "/srv/podman.sock"},
		{"", "/run/user/1000", 1000, "", "/run/user/1000/podman/devsandbox-krun.sock"},
		{"", "/run/user/1000", 1000, "0a1b2c3d", "/run/user/1000/podman/devsandbox-krun-0a1b2c3d.sock"},
		{"", "", 1000, "", "/run/user/1000/podman/devsandbox-krun.sock"},
		{"", "", 0, "", "/run/podman/devsandbox-krun.sock"},
	} {
		if got := socketPath(tc.cfg, tc.rt, tc.uid, "krun", tc.key); got != tc.want {
			t.Errorf("socketPath(%q, %q, %d, %q) = %s, want %s", tc.cfg, tc.rt, tc.uid, tc.key, got, tc.want)
		}
	}
	if got := strings.Join(serviceArgs(false, "krun", "/r/p.sock"), " "); got != "--runtime=krun --cgroup-manager=cgroupfs system service --time=0 unix:///r/p.sock" {
		t.Errorf("serviceArgs = %s", got)
	}
	if got := strings.Join(serviceArgs(true, "runc", "/r/p.sock"), " "); got != "--runtime=runc system service --time=0 unix:///r/p.sock" {
		t.Errorf("serviceArgs = %s", got)
	}
}

// An anchor is bound from where Run staged the pinned directory in podman's
// namespace, never from its path; one not staged fails the render.
func TestAnchorBoundFromStage(t *testing.T) {
	p := basePlan()
	sub := plantest.Project + "/sub"
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: sub, Dest: sub, Why: "holds a masked or protected path", Anchor: true},
		isolator.Mount{Kind: isolator.MaskFile, Dest: sub + "/.env", Why: "sandbox.mask_files"},
	)
	o := opts
	o.Anchors = map[string]string{sub: "/run/user/1000/devsandbox/anchors-1/0"}
	s, err := specGen(p, o)
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, m := range s.Gen.Mounts {
		if m.Destination == sub {
			srcs = append(srcs, m.Source)
		}
	}
	if len(srcs) != 1 || srcs[0] != "/run/user/1000/devsandbox/anchors-1/0" {
		t.Errorf("the anchor is bound from %q, want the staged directory only", srcs)
	}
	o.Anchors = map[string]string{}
	if _, err := specGen(p, o); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("an anchor not staged: %v, want ErrProtection", err)
	}
}

// TestContainerKeepsImagePath: the Plan's PATH (the host's, or one set with -e) never
// reaches the container's environment nor --dry-run's podman command: the image's
// PATH applies. The host's PATH names host directories (~/.local/bin, a Nix profile)
// that the image does not have, or has with other programs, and it would override the
// ENV PATH the image was built with, so its own programs would not be found.
func TestContainerKeepsImagePath(t *testing.T) {
	for _, fromHost := range []bool{true, false} {
		p := basePlan()
		for i, e := range p.Env {
			if e.Name == "PATH" {
				p.Env[i] = isolator.EnvVar{Name: "PATH", Value: "/host/only/bin:/usr/bin", FromHost: fromHost}
			}
		}
		s, err := specGen(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := s.Gen.Env["PATH"]; ok {
			t.Errorf("fromHost=%v: PATH=%q in the container's environment", fromHost, v)
		}
		if s.Gen.Env["LANG"] != "C.UTF-8" {
			t.Errorf("the Plan's other variables are missing too (%v), so the check above proves nothing", s.Gen.Env)
		}
		script := s.Script()
		for _, w := range strings.Fields(script) {
			w = strings.TrimLeft(w, `'"`)
			if w == "PATH" || strings.HasPrefix(w, "PATH=") || strings.HasPrefix(w, "PATH'") {
				t.Errorf("fromHost=%v: the --dry-run script sets PATH (%q):\n%s", fromHost, w, script)
			}
		}
		if strings.Contains(script, "/host/only/bin") {
			t.Errorf("fromHost=%v: the host's PATH is in the --dry-run script:\n%s", fromHost, script)
		}
	}
}

// The renderer refuses a containers' home above the host home while the project, below
// the host home, is shown at its host path (container.Lay; config refuses the same
// docker.home on load, a library caller's Options never passed there).
func TestHomeAboveHostHomeRefused(t *testing.T) {
	o := opts
	o.Home = "/home"
	if _, err := specGen(basePlan(), o); !errors.Is(err, isolator.ErrConfig) || !strings.Contains(err.Error(), "set docker.home to "+home+",") {
		t.Fatalf("got %v, want ErrConfig naming the fix", err)
	}
}

// The image's ENV: podman gives it to the container under the spec's variables, so
// the spec removes each variable it does not set itself (PATH aside) and the
// manifest gives them back to the command through the init; none reaches the init.
func TestImageEnvThroughInit(t *testing.T) {
	cases := []struct {
		name      string
		image     []string
		env       map[string]string
		wantUnset []string
		wantGive  []string
	}{
		{"none", nil, map[string]string{"HOME": "/home/u"}, nil, nil},
		{"go runtime", []string{"GODEBUG=tlsrsakex=1", "GOTRACEBACK=crash", "GOMAXPROCS=3", "PATH=/img/bin:/usr/bin"},
			map[string]string{"HOME": "/home/u"},
			[]string{"GODEBUG", "GOTRACEBACK", "GOMAXPROCS"},
			[]string{"GODEBUG=tlsrsakex=1", "GOTRACEBACK=crash", "GOMAXPROCS=3", "PATH=/img/bin:/usr/bin"}},
		{"the run's own win", []string{"HOME=/img", "LANG=C", "DSBIE=x"},
			map[string]string{"HOME": "/home/u", "LANG": "C.UTF-8"},
			[]string{"DSBIE"}, []string{"DSBIE=x"}},
		{"the manifest and odd entries are never the image's", []string{wire.ManifestEnv + "={}", "NOEQ", "=x", "EMPTY="},
			map[string]string{},
			[]string{"EMPTY"}, []string{"EMPTY="}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unset, give := imageEnv(c.image, c.env)
			if !slices.Equal(unset, c.wantUnset) || !slices.Equal(give, c.wantGive) {
				t.Errorf("imageEnv(%q) = %q, %q; want %q, %q", c.image, unset, give, c.wantUnset, c.wantGive)
			}
		})
	}

	o := opts
	o.ImageEnv = []string{"GODEBUG=tlsrsakex=1", "PATH=/img/bin", "HOME=/img", "DSBIE=x"}
	s, err := specGen(basePlan(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GODEBUG", "DSBIE"}; !slices.Equal(s.Gen.UnsetEnv, want) {
		t.Errorf("UnsetEnv %q, want %q (HOME is the run's, PATH stays)", s.Gen.UnsetEnv, want)
	}
	if s.Gen.Env["HOME"] != "/home/u" {
		t.Errorf("HOME %q, want the run's", s.Gen.Env["HOME"])
	}
	m, err := wire.DecodeManifest(s.Gen.Env[wire.ManifestEnv])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GODEBUG=tlsrsakex=1", "PATH=/img/bin", "DSBIE=x"}; !slices.Equal(m.ImageEnv, want) {
		t.Errorf("manifest ImageEnv %q, want %q", m.ImageEnv, want)
	}
	// --dry-run knows no image ENV: the script is as before.
	if s, _ := specGen(basePlan(), opts); s.Gen.UnsetEnv != nil {
		t.Errorf("UnsetEnv %q without an image ENV, want none", s.Gen.UnsetEnv)
	}
}
