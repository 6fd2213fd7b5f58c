package bwrap_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/syscalls"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

const (
	home        = "/home/u"
	project     = "/home/u/src/app"
	sandboxHome = "/home/u/.local/share/devsandbox/app-0123abcd/home"
	stateDir    = "/home/u/.local/state/devsandbox/app-0123abcd"
	emptyFile   = "/home/u/.local/state/devsandbox/empty"
	self        = "/usr/local/bin/devsandbox"
	// etcSnapshots is where Build places the /etc snapshots.
	etcSnapshots = "/home/u/.local/state/devsandbox/etc"
)

// basePlan is a plan as Build makes it for a project under the home directory: the
// sandbox home over the host home, then the project.
func basePlan() *isolator.Plan {
	return &isolator.Plan{
		Project:     isolator.Project{Dir: project, ID: "0123abcd", Name: "app-0123abcd"},
		Workdir:     project + "/sub dir",
		User:        isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: home, Shell: "/bin/bash"},
		SandboxHome: sandboxHome,
		StateDir:    stateDir,
		EmptyFile:   emptyFile,
		Self:        self,
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: sandboxHome, Dest: home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: project, Dest: project, Why: "project"},
		},
		Tmp:     isolator.Tmp{Kind: "session", Dir: stateDir + "/tmp"},
		Env:     []isolator.EnvVar{{Name: "DEVSANDBOX", Value: "1"}},
		Egress:  egress.Rules{Mode: egress.None},
		Command: []string{"bash", "-lc", "echo 'hi there'"},
	}
}

// minimalSystem is a default system view as Build probes it on a merged-/usr host.
var minimalSystem = []isolator.SystemPath{
	{Path: "/usr", Optional: true},
	{Path: "/bin", Link: "usr/bin", Optional: true},
	{Path: "/lib64", Link: "usr/lib64", Optional: true},
	{Path: "/opt", Optional: true},
	{Path: "/etc/resolv.conf", Optional: true, Copy: true},
	{Path: "/etc/passwd", Optional: true, Copy: true},
	{Path: "/etc/ssl", Optional: true},
	{Path: "/srv/tools"}, // a configured system bind: not optional
}

var goldenCases = []struct {
	name string
	plan func() *isolator.Plan
	// how the limits are enforced (bwrap.RenderEnforced); "": as a library run;
	// initReachable: as Run on a host where the init is reached in its system
	// directory without a link or a mount crossing (bwrap.RenderInitAt)
	how string
}{
	{"minimal", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem
		return p // egress none, session /tmp before Run picked the session
	}, ""},
	{"host_view", func() *isolator.Plan {
		p := basePlan()
		p.System.Host = true
		p.Egress = egress.Rules{Mode: egress.Open}
		p.Tmp = isolator.Tmp{Kind: "tmpfs"}
		return p
	}, ""},
	{"disk_reserve", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		// sandbox.disk_reserve: the init waits for Run's go-ahead (wire.AwaitGoArg),
		// which follows the reserve's first reading.
		p.Limits.DiskReserve = 2 << 30
		return p
	}, ""},
	{"tmp_size", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Tmp = isolator.Tmp{Kind: "tmpfs", Size: 64 << 20} // sandbox.tmp_size = "64m"
		return p
	}, ""},
	{"mount_kinds", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Tmp.Session = "s-20240101-abcdef"
		p.TTY = true
		p.Command = []string{"/bin/zsh"}
		p.Mounts = append(p.Mounts,
			isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			isolator.Mount{Kind: isolator.MaskFile, HomeRel: ".netrc", Why: "sandbox.hide_paths"},
			isolator.Mount{Kind: isolator.Bind, Source: home + "/.ssh/known_hosts", HomeRel: ".ssh/known_hosts", ReadOnly: true, Optional: true, Why: "tool ssh"},
			isolator.Mount{Kind: isolator.Data, HomeRel: ".ssh/config", Content: []byte("Host *\n"), Why: "tool ssh"},
			isolator.Mount{Kind: isolator.Bind, Source: "/run/user/1000/agent.sock", Dest: "/run/devsandbox/ssh-agent.sock", Why: "tool ssh"},
			isolator.Mount{Kind: isolator.Bind, Source: "/data/sets", Dest: "/mnt/sets", ReadOnly: true, Why: "sandbox.host_mounts"},
			isolator.Mount{Kind: isolator.Bind, Source: "/var/maybe", Dest: "/var/maybe", Optional: true, Why: "optional rw"},
			isolator.Mount{Kind: isolator.TmpDir, HomeRel: ".cache/scratch", Why: "tool tmpfs"},
			isolator.Mount{Kind: isolator.Bind, Source: project + "/.git/hooks", Dest: project + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
			isolator.Mount{Kind: isolator.MaskDir, Dest: project + "/.git/info/empty", Why: "mask dir"},
			isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env", Why: "sandbox.mask_files"},
			isolator.Mount{Kind: isolator.Data, Dest: "/etc/devsandbox.conf", Content: []byte("x=1\n"), Why: "generated"},
		)
		return p
	}, ""},
	{"secrets_env", func() *isolator.Plan {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Open}
		p.Env = []isolator.EnvVar{
			{Name: "DEVSANDBOX", Value: "1"},
			{Name: "GREETING", Value: "hello world"},
			{Name: "PATH", Value: "/usr/bin:/bin", FromHost: true},
		}
		p.Secrets = []isolator.Secret{
			{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
			{Name: "db_password", FileSource: "/home/u/secrets/db", AsFile: true},
			{Name: "tls_key", FileSource: "/home/u/secrets/tls.key", AsFile: true},
		}
		p.HostEnv = map[string]string{"API_TOKEN": "tok-value", "PATH": "/usr/bin:/bin"}
		return p
	}, ""},
	{"egress_proxy", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Egress = egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: "/home/u/.local/state/devsandbox/app-1/proxy-s1.sock"}}
		return p // no network but loopback; the init hands its listener to the proxy (no socket bound in)
	}, ""},
	{"egress_allowlist", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Egress = egress.Rules{
			Mode:     egress.Allowlist,
			Proxy:    egress.Endpoint{Unix: "/home/u/.local/state/devsandbox/app-1/proxy-s1.sock"},
			Allow:    []egress.Entry{{Host: "example.test", Port: 443}, {Prefix: netip.MustParsePrefix("10.231.0.2/32"), Port: 8080}},
			Resolved: []egress.Resolved{{Host: "example.test", Port: 443, Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.7")}}},
		}
		return p // pasta and the prologue first, bwrap in pasta's namespaces as the user
	}, ""},
	{"init_in_view", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem
		p.Self = "/usr/libexec/devsandbox/devsandbox-init" // visible through /usr: run in place
		return p
	}, initReachable},
	{"pinned", func() *isolator.Plan {
		// As Run renders it: every bind source opened (an ID), bound by descriptor,
		// and checked by the init at its destination, as the file mask is.
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Mounts = append(p.Mounts,
			isolator.Mount{Kind: isolator.Bind, Source: project + "/.git/hooks", Dest: project + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
			isolator.Mount{Kind: isolator.MaskFile, Dest: project + "/.env", Why: "sandbox.mask_files"},
			isolator.Mount{Kind: isolator.Data, Dest: "/etc/devsandbox.conf", Content: []byte("x=1\n"), Why: "generated"},
		)
		for i := range p.Mounts {
			if p.Mounts[i].Kind == isolator.Bind || p.Mounts[i].Kind == isolator.MaskFile {
				p.Mounts[i].ID = &isolator.FileID{Dev: 2049, Ino: uint64(100 + i)}
			}
		}
		return p
	}, ""},
	{"etc_snapshot", func() *isolator.Plan {
		// The default view's /etc files in one snapshot mounted at /etc, before the
		// /etc directories bound over its mount points; the allowlist's /etc/hosts
		// over the snapshot's copy; the sandbox's own /etc/passwd in the snapshot,
		// nothing bound over it.
		p := basePlan()
		p.System.Paths = append(slices.Clone(minimalSystem[:6]),
			isolator.SystemPath{Path: "/etc/hosts", Optional: true, Copy: true},
			isolator.SystemPath{Path: "/etc/ld.so.conf.d/libc.conf", Optional: true, Copy: true},
			isolator.SystemPath{Path: "/etc/java-17-openjdk", Optional: true},
		)
		p.System.Snapshot = etcSnapshots
		p.System.Passwd = []byte("u:x:1000:1000::/home/u/elsewhere:/bin/sh\n")
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Data, Dest: "/etc/hosts", Content: []byte("203.0.113.7 example.test\n"), Why: "egress allowlist names"})
		return p
	}, ""},
	{"init_outside_view", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem
		p.Self = "/home/u/.local/bin/devsandbox-init" // the host home is not visible: mounted
		return p
	}, ""},
	{"limits_relaxed", func() *isolator.Plan {
		p := basePlan()
		p.System.Paths = minimalSystem[:2]
		p.Tmp.Session = "s-20240101-abcdef"
		p.Syscalls = syscalls.Policy{Relax: []syscalls.Group{syscalls.IOURing, syscalls.UserNS}}
		p.Limits = isolator.Limits{Pids: 512, Memory: 256 << 20, CPUs: 1.5}
		return p // a systemd scope with the memory and CPU limits; no --disable-userns
	}, ""},
	{"limits_cgroup_v1", func() *isolator.Plan {
		p := basePlan()
		p.User = isolator.User{Name: "root", HostHome: home, Shell: "/bin/sh"}
		p.System.Paths = minimalSystem[:2]
		p.Egress = egress.Rules{
			Mode:     egress.Allowlist,
			Proxy:    egress.Endpoint{Unix: "/home/u/.local/state/devsandbox/app-1/proxy-s1.sock"},
			Allow:    []egress.Entry{{Prefix: netip.MustParsePrefix("10.231.0.2/32"), Port: 8080}},
			Resolved: []egress.Resolved{},
		}
		p.Limits = isolator.Limits{Pids: 4096, Memory: 256 << 20, CPUs: 1.5}
		return p // root on cgroup v1: the join step, then pasta; no --nproc
	}, "cgroup v1"},
	{"limits_cgroup_v2", func() *isolator.Plan {
		p := basePlan()
		p.User = isolator.User{Name: "root", HostHome: home, Shell: "/bin/sh"}
		p.System.Paths = minimalSystem[:2]
		p.Limits = isolator.Limits{Pids: 4096}
		return p // root on cgroup v2: bwrap cloned into the session cgroup, no prefix
	}, "cgroup v2"},
	{"limits_scope", func() *isolator.Plan {
		p := basePlan()
		p.User = isolator.User{Name: "root", HostHome: home, Shell: "/bin/sh"}
		p.System.Paths = minimalSystem[:2]
		p.Tmp.Session = "s-20240101-abcdef"
		p.Limits = isolator.Limits{Pids: 4096, Memory: 1 << 30}
		return p // root with a user manager and no cgroup of its own: TasksMax in the scope
	}, "scope"},
}

// seccompElided returns spec's files with the seccomp program, which depends on the
// architecture the test runs on, checked and replaced by a marker.
func seccompElided(t *testing.T, spec *bwrap.Spec) []bwrap.File {
	t.Helper()
	var out []bwrap.File
	for _, f := range spec.Files {
		if f.Kind == bwrap.Seccomp {
			arch, err := syscalls.Native()
			if err != nil {
				t.Fatal(err)
			}
			want, err := syscalls.Seccomp(spec.Policy, arch)
			if err != nil || string(f.Content) != string(want) {
				t.Errorf("the seccomp descriptor does not carry the policy's program (%v)", err)
			}
			f.Content = []byte("<the seccomp program of the policy " + spec.Policy.String() + ">")
		}
		out = append(out, f)
	}
	return out
}

// goldenSpec is the JSON form of a Spec kept in testdata.
type goldenSpec struct {
	Prefix    []string `json:",omitempty"`
	Argv      []string
	Env       []isolator.EnvVar
	Files     []bwrap.File
	SecretEnv []isolator.Secret
	InitEnv   []string     `json:",omitempty"`
	Checks    []wire.Check `json:",omitempty"`
}

// initReachable is the goldenCases how of a rendering on a host where the init
// is reached in its system directory without a link or a mount crossing.
const initReachable = "init reachable"

// renderCase renders p as a goldenCases entry with how says.
func renderCase(p *isolator.Plan, how string) (*bwrap.Spec, error) {
	switch how {
	case "":
		return bwrap.Render(p)
	case initReachable:
		return bwrap.RenderInitAt(p, func(string, string) bool { return true })
	}
	return bwrap.RenderEnforced(p, how)
}

// Every option render gives bwrap is one the mount-table read count of doctor knows
// (bwrapArity): an unknown one would be skipped with its arguments taken as options.
func TestRenderOptionsKnown(t *testing.T) {
	for _, tc := range goldenCases {
		spec, err := renderCase(tc.plan(), tc.how)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, a := range spec.Argv[1:] {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "--") && !bwrap.KnownOption(a) {
				t.Errorf("%s: option %s is unknown to the mount-table read count", tc.name, a)
			}
		}
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := renderCase(tc.plan(), tc.how)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got := goldenSpec{Prefix: spec.Prefix, Argv: spec.Argv, Env: spec.Env, Files: seccompElided(t, spec), SecretEnv: spec.SecretEnv, InitEnv: spec.InitEnv, Checks: spec.Checks}
			js, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			specFile := filepath.Join("testdata", tc.name+".spec.golden")
			scriptFile := filepath.Join("testdata", tc.name+".script.golden")
			if *update {
				writeGolden(t, specFile, append(js, '\n'))
				writeGolden(t, scriptFile, []byte(spec.Script()))
			}
			var want goldenSpec
			if err := json.Unmarshal(readGolden(t, specFile), &want); err != nil {
				t.Fatalf("%s: %v", specFile, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Render differs from %s (run with -update to accept):\ngot:\n%s", specFile, js)
			}
			if got, want := spec.Script(), string(readGolden(t, scriptFile)); got != want {
				t.Errorf("Script differs from %s (run with -update to accept):\ngot:\n%s\nwant:\n%s", scriptFile, got, want)
			}
		})
	}
}

// TestRenderFDs checks the descriptor contract Run relies on: data descriptors are
// numbered from ReadyFD+1 upwards without gaps, in argv order.
func TestRenderFDs(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := renderCase(tc.plan(), tc.how)
			if err != nil {
				t.Fatal(err)
			}
			var argvFDs []string
			for i, a := range spec.Argv {
				if (a == "--file" || a == "--ro-bind-data" || a == "--seccomp" || strings.HasSuffix(a, "-bind-fd")) && i+1 < len(spec.Argv) {
					argvFDs = append(argvFDs, spec.Argv[i+1])
				}
			}
			var fileFDs []string
			for i, f := range spec.Files {
				if f.FD != bwrap.StatusFD+1+i {
					t.Errorf("Files[%d].FD = %d, want %d", i, f.FD, bwrap.StatusFD+1+i)
				}
				fileFDs = append(fileFDs, strconv.Itoa(f.FD))
			}
			if !reflect.DeepEqual(argvFDs, fileFDs) {
				t.Errorf("descriptors in argv %v, in Files %v", argvFDs, fileFDs)
			}
		})
	}
}

// TestNoSecretValues: values of env secrets and passthrough variables reach bwrap only
// through its environment, never argv, and Script shows names only.
func TestNoSecretValues(t *testing.T) {
	const secretValue = "SECRET-sk_live_7f3a9"
	const passValue = "PASSTHROUGH-ghp_91b2c"
	p := basePlan()
	p.Env = append(p.Env, isolator.EnvVar{Name: "GITHUB_TOKEN_PLAIN", Value: passValue, FromHost: true})
	p.Secrets = []isolator.Secret{
		{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
		{Name: "cert", FileSource: "/home/u/cert.pem", AsFile: true},
	}
	p.HostEnv = map[string]string{"API_TOKEN": secretValue, "GITHUB_TOKEN_PLAIN": passValue, "HOME": home}

	spec, err := bwrap.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range spec.Argv {
		for name, v := range p.HostEnv {
			if v != home && strings.Contains(a, v) {
				t.Errorf("argv[%d] = %q holds the value of %s", i, a, name)
			}
		}
	}
	script := spec.Script()
	for _, v := range []string{secretValue, passValue} {
		if strings.Contains(script, v) {
			t.Errorf("Script holds the value %q:\n%s", v, script)
		}
	}
	// The secret is delivered through the environment, not --setenv.
	if !reflect.DeepEqual(spec.SecretEnv, p.Secrets[:1]) {
		t.Errorf("SecretEnv = %+v, want %+v", spec.SecretEnv, p.Secrets[:1])
	}
	for _, a := range spec.Argv {
		if a == "--setenv" {
			t.Errorf("argv uses --setenv: %q", spec.Argv)
		}
	}
}

// TestRenderInitHostView: under the host view the host home, /tmp and /run are still
// replaced, so an init installed below them is not where the host has it.
func TestRenderInitHostView(t *testing.T) {
	for _, self := range []string{"/home/u/.local/bin/devsandbox-init", "/tmp/build/devsandbox-init"} {
		p := basePlan()
		p.System.Host = true
		p.Self = self
		spec, err := bwrap.Render(p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(spec.Argv, bwrap.InitPath) {
			t.Errorf("Self %s is run in place, where the sandbox does not show it: %q", self, spec.Argv)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	for name, mut := range map[string]func(*isolator.Plan){
		"unknown tmp":        func(p *isolator.Plan) { p.Tmp.Kind = "ramdisk" },
		"unknown mount kind": func(p *isolator.Plan) { p.Mounts = append(p.Mounts, isolator.Mount{Kind: 99, Dest: "/x"}) },
	} {
		t.Run(name, func(t *testing.T) {
			p := basePlan()
			mut(p)
			if spec, err := bwrap.Render(p); err == nil {
				t.Fatalf("Render succeeded: %q", spec.Argv)
			}
		})
	}
}

// TestRenderTmpSizeNeedsTmpfs: sandbox.tmp_size with a session or shm /tmp (a
// directory of a host file system, which no size bounds) is refused as a
// configuration error, not rendered without the limit.
func TestRenderTmpSizeNeedsTmpfs(t *testing.T) {
	for _, kind := range []string{"session", "shm"} {
		p := basePlan()
		p.Tmp.Kind, p.Tmp.Size = kind, 1<<20
		if _, err := bwrap.Render(p); !errors.Is(err, isolator.ErrConfig) {
			t.Errorf("sandbox.tmp = %q with a size: Render gave %v; want an error of class ErrConfig", kind, err)
		}
	}
}

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	return b
}

func writeGolden(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRenderDataOp: a generated file is written into a tmpfs that is remounted
// read-only once everything is placed (a masked directory, bwrap's root) and bound
// read-only on its own anywhere else.
func TestRenderDataOp(t *testing.T) {
	data := func(dest string) isolator.Mount {
		return isolator.Mount{Kind: isolator.Data, Dest: dest, Content: []byte("x\n"), Why: "generated"}
	}
	mask := isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"}
	cases := []struct {
		name   string
		edit   func(p *isolator.Plan)
		dest   string
		wantOp string
	}{
		{"in a masked directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, mask, data(home+"/.ssh/config"))
		}, home + "/.ssh/config", "--file"},
		{"deeper in a masked directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, mask, data(home+"/.ssh/sub/config"))
		}, home + "/.ssh/sub/config", "--file"},
		{"in a bind inside a masked directory", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, mask,
				isolator.Mount{Kind: isolator.Bind, Source: "/srv/keys", Dest: home + "/.ssh/sub", Why: "bind"},
				data(home+"/.ssh/sub/config"))
		}, home + "/.ssh/sub/config", "--ro-bind-data"},
		{"in a masked directory hidden by a later bind above it", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, mask,
				isolator.Mount{Kind: isolator.Bind, Source: "/srv/home", Dest: home, Why: "bind"},
				data(home+"/.ssh/config"))
		}, home + "/.ssh/config", "--ro-bind-data"},
		{"over a file already there", func(p *isolator.Plan) {
			again := data(home + "/.ssh/config")
			again.Content = []byte("y\n") // the same content would repeat it: left out (isolator.Mount.Repeats)
			p.Mounts = append(p.Mounts, mask, data(home+"/.ssh/config"), again)
		}, home + "/.ssh/config", "--file --ro-bind-data"},
		{"in a writable tmpfs", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.TmpDir, HomeRel: ".cache/x", Why: "tool tmpfs"}, data(home+"/.cache/x/f"))
		}, home + "/.cache/x/f", "--ro-bind-data"},
		{"in /run", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data("/run/devsandbox/ca-bundle.pem"))
		}, "/run/devsandbox/ca-bundle.pem", "--ro-bind-data"},
		{"in the sandbox home", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data(home+"/.config/x"))
		}, home + "/.config/x", "--ro-bind-data"},
		{"in the root tmpfs", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data("/etc/devsandbox.conf"))
		}, "/etc/devsandbox.conf", "--file"},
		{"in the host's root", func(p *isolator.Plan) {
			p.System.Host = true
			p.Mounts = append(p.Mounts, data("/etc/devsandbox.conf"))
		}, "/etc/devsandbox.conf", "--ro-bind-data"},
		{"in a system bind", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data("/etc/ssl/extra.pem"))
		}, "/etc/ssl/extra.pem", "--ro-bind-data"},
		{"over a copied /etc file", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data("/etc/resolv.conf"))
		}, "/etc/resolv.conf", "--ro-bind-data"},
		{"over the /etc snapshot", func(p *isolator.Plan) {
			p.System.Snapshot = etcSnapshots
			p.System.Paths = append(slices.Clone(p.System.Paths), isolator.SystemPath{Path: "/etc/hosts", Optional: true, Copy: true})
			p.Mounts = append(p.Mounts, data("/etc/hosts"))
		}, "/etc/hosts", "--ro-bind-data"},
		{"below a link", func(p *isolator.Plan) {
			p.Mounts = append(p.Mounts, data("/bin/tool"))
		}, "/bin/tool", "--ro-bind-data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			p.System.Paths = minimalSystem
			tc.edit(p)
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string // the op of each generated file, in order
			for _, f := range spec.Files {
				if f.Kind != bwrap.Content {
					continue
				}
				for i := 1; i+1 < len(spec.Argv); i++ {
					if spec.Argv[i+1] == strconv.Itoa(f.FD) && (spec.Argv[i] == "--file" || spec.Argv[i] == "--ro-bind-data") {
						ops = append(ops, spec.Argv[i])
					}
				}
			}
			if got := strings.Join(ops, " "); got != tc.wantOp {
				t.Errorf("ops for %s: %q, want %q\n%s", tc.dest, got, tc.wantOp, spec.Script())
			}
		})
	}
}

// The init's runtime starts with one P unless the command's environment sets
// GOMAXPROCS: then the init gets neither the variable nor the argument that makes it
// remove the variable again, and the command gets the value it was given.
func TestInitGOMAXPROCS(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *isolator.Plan)
		one  bool
	}{
		{"plain", func(*isolator.Plan) {}, true},
		{"set by the plan", func(p *isolator.Plan) {
			p.Env = append(p.Env, isolator.EnvVar{Name: "GOMAXPROCS", Value: "4"})
		}, false},
		{"passed from the host", func(p *isolator.Plan) {
			p.Env = append(p.Env, isolator.EnvVar{Name: "GOMAXPROCS", FromHost: true})
		}, false},
		{"an env secret", func(p *isolator.Plan) {
			p.Secrets = append(p.Secrets, isolator.Secret{Name: "GOMAXPROCS", EnvSource: "HOST_PROCS"})
		}, false},
		{"no init", func(p *isolator.Plan) { p.Self = "" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			p.Syscalls.Unfiltered = true
			tc.edit(p)
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			arg := slices.Contains(spec.Argv, wire.UnsetGOMAXPROCSArg)
			env := slices.Contains(spec.InitEnv, wire.InitGOMAXPROCS)
			if arg != tc.one || env != tc.one || len(spec.InitEnv) > 1 {
				t.Errorf("argument %v, InitEnv %q; want the argument and GOMAXPROCS=1: %v", arg, spec.InitEnv, tc.one)
			}
			for _, e := range spec.Env {
				if e.Name == "GOMAXPROCS" && e.Value == "1" && !e.FromHost {
					t.Errorf("GOMAXPROCS=1 in the command's environment: %+v", spec.Env)
				}
			}
		})
	}
}

// TestInitScopesAbstractSockets: under egress "open" (bwrap --share-net, the host's
// network namespace and so its abstract Unix sockets) the init is told to start the
// command in a Landlock domain scoped to its own abstract sockets; in the other modes
// the sandbox has a network namespace of its own, and the argument is not given.
func TestInitScopesAbstractSockets(t *testing.T) {
	for _, tc := range []struct {
		mode egress.Mode
		want bool
	}{{egress.Open, true}, {egress.None, false}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			p := basePlan()
			p.Syscalls.Unfiltered = true
			p.Egress.Mode = tc.mode
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			dash := slices.Index(spec.Argv, "--")
			got := dash >= 0 && slices.Contains(spec.Argv[dash:], wire.ScopeAbstractArg)
			if got != tc.want {
				t.Errorf("egress %s: init argument %s given %v, want %v: %q", tc.mode, wire.ScopeAbstractArg, got, tc.want, spec.Argv)
			}
		})
	}
}

// TestRenderShownAlready: a read-only bind that an earlier read-only bind of a
// directory already shows (same source below it, same place, nothing mounted between
// at or below it) is left out of the argv and of the init's checks; every other bind
// stays.
func TestRenderShownAlready(t *testing.T) {
	const nvm = home + "/.nvm"
	const bin = nvm + "/versions/node/v22/bin"
	ro := func(src, homeRel string) isolator.Mount {
		return isolator.Mount{Kind: isolator.Bind, Source: src, HomeRel: homeRel, ReadOnly: true, Optional: true}
	}
	cases := []struct {
		name   string
		mounts []isolator.Mount
		kept   []bool // per mount: bound (and checked)
	}{
		{"below a read-only bind", []isolator.Mount{ro(nvm, ".nvm"), ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, false}},
		{"the same bind twice", []isolator.Mount{ro(bin, ".nvm/versions/node/v22/bin"), ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, false}},
		{"an absolute destination", []isolator.Mount{
			{Kind: isolator.Bind, Source: "/srv/tools", Dest: "/srv/tools", ReadOnly: true},
			{Kind: isolator.Bind, Source: "/srv/tools/bin", Dest: "/srv/tools/bin", ReadOnly: true}}, []bool{true, false}},
		{"below a read-write bind", []isolator.Mount{
			{Kind: isolator.Bind, Source: nvm, HomeRel: ".nvm"}, ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true}},
		{"another source", []isolator.Mount{ro("/opt/nvm", ".nvm"), ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true}},
		{"another place below", []isolator.Mount{ro(nvm, ".nvm"), ro(bin, ".nvm/bin")}, []bool{true, true}},
		{"a read-write bind of the same", []isolator.Mount{ro(nvm, ".nvm"),
			{Kind: isolator.Bind, Source: bin, HomeRel: ".nvm/versions/node/v22/bin"}}, []bool{true, true}},
		{"a mask between, below it", []isolator.Mount{ro(nvm, ".nvm"),
			{Kind: isolator.MaskFile, HomeRel: ".nvm/versions/node/v22/bin/npm"},
			ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true, true}},
		{"a directory of its own between, above it", []isolator.Mount{ro(nvm, ".nvm"),
			{Kind: isolator.Bind, Source: stateDir + "/own", HomeRel: ".nvm/versions"},
			ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true, true}},
		{"a mount between, elsewhere", []isolator.Mount{ro(nvm, ".nvm"),
			{Kind: isolator.MaskDir, HomeRel: ".nvm/cache"},
			ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true, false}},
		{"an anchor", []isolator.Mount{ro(nvm, ".nvm"),
			{Kind: isolator.Bind, Source: bin, HomeRel: ".nvm/versions/node/v22/bin", ReadOnly: true, Anchor: true}}, []bool{true, true}},
		{"below a file mask's source", []isolator.Mount{{Kind: isolator.MaskDir, HomeRel: ".nvm"}, ro(bin, ".nvm/versions/node/v22/bin")}, []bool{true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := basePlan()
			p.BwrapInit = "/usr/libexec/devsandbox-bwrap-init"
			p.Mounts = append(p.Mounts, c.mounts...)
			for i := range p.Mounts {
				if p.Mounts[i].Kind == isolator.Bind {
					p.Mounts[i].ID = &isolator.FileID{Dev: 1, Ino: uint64(i + 1)}
				}
			}
			s, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			binds := map[string]int{} // destination: bind operations
			for j := 2; j < len(s.Argv); j++ {
				if strings.Contains(s.Argv[j-2], "bind") {
					binds[s.Argv[j]]++
				}
			}
			want, pinned := map[string]int{}, 0
			for i, m := range p.Mounts {
				if m.Kind == isolator.Bind && (i < len(p.Mounts)-len(c.mounts) || c.kept[i-(len(p.Mounts)-len(c.mounts))]) {
					want[m.Target(home)]++
					pinned++
				}
			}
			for i, m := range c.mounts {
				if m.Kind != isolator.Bind {
					continue
				}
				dst := m.Target(home)
				if binds[dst] != want[dst] {
					t.Errorf("mount %d (%s): bound %d times, want %d\n%s", i, dst, binds[dst], want[dst], strings.Join(s.Argv, " "))
				}
				ino := uint64(len(p.Mounts) - len(c.mounts) + i + 1)
				checked := slices.ContainsFunc(s.Checks, func(k wire.Check) bool { return k.Path == dst && k.Ino == ino })
				if checked != c.kept[i] {
					t.Errorf("mount %d (%s): checked %v, want %v", i, dst, checked, c.kept[i])
				}
			}
			n := 0
			for _, f := range s.Files {
				if f.Kind == bwrap.Pinned {
					n++
				}
			}
			if n != pinned {
				t.Errorf("%d pinned descriptors, want %d", n, pinned)
			}
		})
	}
}

// TestRenderRepetitionsLeftOut: the planner repeats a mount below the home at its
// host path, for containers whose home lies elsewhere (isolator.Mount.Repeats). Here
// the home is the host home's path: each repetition lands where the mount it repeats
// did, and is left out, so the argv (and what the init checks) does not grow.
func TestRenderRepetitionsLeftOut(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := renderCase(tc.plan(), tc.how)
			if err != nil {
				t.Fatal(err)
			}
			p := tc.plan()
			var ms []isolator.Mount
			for _, m := range p.Mounts {
				ms = append(ms, m)
				if m.Source == p.SandboxHome {
					continue
				}
				r := m
				r.Dest, r.HomeRel, r.Why = m.Target(p.User.HostHome), "", m.Why+" (at its host path)"
				ms = append(ms, r)
			}
			p.Mounts = ms
			got, err := renderCase(p, tc.how)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Argv, want.Argv) || !reflect.DeepEqual(got.Checks, want.Checks) || got.Script() != want.Script() {
				t.Errorf("with repetitions:\n%s\nwant:\n%s", got.Script(), want.Script())
			}
		})
	}
}

// TestRenderPasswd: SystemView.Passwd is what the sandbox sees at /etc/passwd, read
// only, wherever the host's file would be: a --file copy of it in place of the host
// file's copy, bound over the /etc snapshot (which keeps the host's file), over the
// host's root; the host's file stays where there is none.
func TestRenderPasswd(t *testing.T) {
	passwd := []byte("u:x:1000:1000::/home/u:/bin/sh\n")
	cases := []struct {
		name string
		edit func(p *isolator.Plan)
		want string // the ops placing /etc/passwd, in order: "--file host", "--file", "--ro-bind-data"
		// snap is the /etc snapshot's passwd entry, with its content; "" when none.
		snap string
	}{
		{"the host's, copied", func(p *isolator.Plan) {}, "--file host", ""},
		{"copied", func(p *isolator.Plan) { p.System.Passwd = passwd }, "--file", ""},
		{"the host's, in the /etc snapshot", func(p *isolator.Plan) {
			p.System.Snapshot = etcSnapshots
		}, "", `{passwd /etc/passwd false false }`},
		// The snapshot holds the sandbox's own: nothing is bound over it.
		{"in the /etc snapshot", func(p *isolator.Plan) {
			p.System.Snapshot, p.System.Passwd = etcSnapshots, passwd
		}, "", fmt.Sprintf("{passwd  false false %s}", passwd)},
		{"over the host's root", func(p *isolator.Plan) {
			p.System = isolator.SystemView{Host: true, Passwd: passwd}
		}, "--ro-bind-data", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			p.System.Paths = minimalSystem // copies /etc/passwd
			tc.edit(p)
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			snap := ""
			for _, f := range spec.Files {
				for _, e := range f.Snapshot {
					if e.Name == "passwd" {
						snap = fmt.Sprintf("%v", e)
					}
				}
				if f.Dest != "/etc/passwd" {
					continue
				}
				for i := 1; i+2 < len(spec.Argv); i++ {
					if spec.Argv[i+1] != strconv.Itoa(f.FD) || spec.Argv[i+2] != "/etc/passwd" {
						continue
					}
					if spec.Argv[i-2] != "--perms" || spec.Argv[i-1] != "0444" {
						t.Errorf("/etc/passwd is placed with %q, not --perms 0444", spec.Argv[i-2:i])
					}
					switch {
					case f.Kind == bwrap.HostFile && f.Source == "/etc/passwd":
						ops = append(ops, spec.Argv[i]+" host")
					case f.Kind == bwrap.Content && bytes.Equal(f.Content, passwd):
						ops = append(ops, spec.Argv[i])
					default:
						t.Errorf("/etc/passwd from %+v", f)
					}
				}
			}
			if got := strings.Join(ops, " "); got != tc.want {
				t.Errorf("/etc/passwd placed by %q, want %q\n%s", got, tc.want, spec.Script())
			}
			if snap != tc.snap {
				t.Errorf("the /etc snapshot's passwd entry is %q, want %q", snap, tc.snap)
			}
		})
	}
}
