package planner

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// hostEnv is the host environment of the env and secrets tests, beyond the fixture's.
var hostEnv = []string{
	"LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8", "TERM=xterm", "LANGUAGE=en",
	"AWS_SECRET_ACCESS_KEY=aws-secret", "DOCKER_HOST=tcp://docker:2375",
	"GOPATH=/home/u/go", "NPM_TOKEN=npm-secret", "API_TOKEN=api-secret", "BUILD_NOTE=ghp_0123456789abcdefXYZ",
}

func envLines(env []isolator.EnvVar) []string {
	var out []string
	for _, e := range env {
		src := "set"
		if e.FromHost {
			src = "host"
		}
		if e.Credential {
			src += ", credential"
		}
		out = append(out, fmt.Sprintf("%s=%s (%s)", e.Name, e.Value, src))
	}
	return out
}

func TestBuildEnv(t *testing.T) {
	allowed := []string{
		"HOME=$HOME (host)", "LC_ALL=C.UTF-8 (host)", "LC_CTYPE=C.UTF-8 (host)", "PATH=/usr/bin:/bin (host)",
		"SHELL=/bin/bash (host)", "TERM=xterm (host)", "USER=u (host)",
	}
	marker := []string{"DEVSANDBOX=1 (set)", "DEVSANDBOX_PROJECT=$PROJ (set)"}
	for _, tc := range []struct {
		name string
		cfg  func(*config.Config)
		want []string // sorted by name
	}{
		{"allowlist only", func(*config.Config) {}, slices.Concat(marker, allowed)},
		{"passthrough by name", func(c *config.Config) { c.Env.Passthrough = []string{"GOPATH", "UNSET_VAR"} },
			slices.Concat(marker, []string{"GOPATH=/home/u/go (host)"}, allowed)},
		{"set overrides the host", func(c *config.Config) { c.Env.Set = map[string]string{"TERM": "dumb", "EDITOR": "vi"} },
			slices.Concat(marker, []string{"EDITOR=vi (set)"}, allowed[:5], []string{"TERM=dumb (set)", "USER=u (host)"})},
		{"DOCKER_HOST passed by name is removed", func(c *config.Config) { c.Env.Passthrough = []string{"DOCKER_HOST"} },
			slices.Concat(marker, allowed)},
		{"DOCKER_HOST passes with docker_socket", func(c *config.Config) {
			c.Env.Passthrough = []string{"DOCKER_HOST"}
			c.Sandbox.DockerSocket = true
		}, slices.Concat(marker, []string{"DOCKER_HOST=tcp://docker:2375 (host)"}, allowed)},
		{"passthrough_all: all but DOCKER_HOST and secrets", func(c *config.Config) {
			c.Env.PassthroughAll = true
			c.Secrets.Env = []string{"API_TOKEN"}
		}, []string{
			"AWS_SECRET_ACCESS_KEY=aws-secret (host, credential)", "BUILD_NOTE=ghp_0123456789abcdefXYZ (host, credential)", "DEVSANDBOX=1 (set)", "DEVSANDBOX_PROJECT=$PROJ (set)",
			"GOPATH=/home/u/go (host)", "HOME=$HOME (host)", "LANGUAGE=en (host)", "LC_ALL=C.UTF-8 (host)",
			"LC_CTYPE=C.UTF-8 (host)", "NPM_TOKEN=npm-secret (host, credential)", "PATH=/usr/bin:/bin (host)",
			"SHELL=/bin/bash (host)", "TERM=xterm (host)", "USER=u (host)",
		}},
		{"credentials by name or value, passed through or set", func(c *config.Config) {
			c.Env.Passthrough = []string{"API_TOKEN", "GOPATH", "BUILD_NOTE"}
			c.Env.Set = map[string]string{"DB_PASSWORD": "hunter2", "EDITOR": "vi", "NOTE": "sk-0123456789abcdefXYZ"}
		}, slices.Concat([]string{"API_TOKEN=api-secret (host, credential)", "BUILD_NOTE=ghp_0123456789abcdefXYZ (host, credential)", "DB_PASSWORD=hunter2 (set, credential)"},
			marker, []string{"EDITOR=vi (set)", "GOPATH=/home/u/go (host)"}, allowed[:3], []string{"NOTE=sk-0123456789abcdefXYZ (set, credential)"}, allowed[3:])},
		{"a secret named in passthrough stays a secret", func(c *config.Config) {
			c.Env.Passthrough = []string{"API_TOKEN"}
			c.Env.Set = map[string]string{"NPM_TOKEN": "plain"}
			c.Secrets.Env = []string{"API_TOKEN", "NPM_TOKEN"}
		}, slices.Concat(marker, allowed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.load(t, hostEnv...)
			cfg.Egress.Mode = "none" // the proxy's variables are TestBuildProxy's
			tc.cfg(cfg)
			p, _ := f.build(t, cfg)
			equalLines(t, "env", envLines(p.Env), f.expand(p, tc.want...))
			for _, s := range cfg.Secrets.Env {
				for _, e := range p.Env {
					if e.Name == s {
						t.Errorf("secret %s is in Plan.Env: %+v", s, e)
					}
				}
			}
		})
	}
}

func TestBuildSecrets(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.root+"/secrets/db", "hunter2")
	writeFile(t, f.root+"/secrets/tls.key", "key")
	cfg := f.load(t, hostEnv...)
	cfg.Secrets.Env = []string{"API_TOKEN", "NOT_ON_HOST"}
	cfg.Secrets.Files = map[string]string{"tls": f.root + "/secrets/tls.key", "db": f.root + "/secrets/db"}
	p, warns := f.build(t, cfg)
	want := []isolator.Secret{
		{Name: "API_TOKEN", EnvSource: "API_TOKEN"},
		{Name: "db", FileSource: f.root + "/secrets/db", AsFile: true},
		{Name: "tls", FileSource: f.root + "/secrets/tls.key", AsFile: true},
	}
	if !reflect.DeepEqual(p.Secrets, want) {
		t.Errorf("Secrets = %+v\nwant %+v", p.Secrets, want)
	}
	if len(warns) != 1 { // NOT_ON_HOST is not passed, and people are told
		t.Errorf("warnings %q, want one about NOT_ON_HOST", warns)
	}
}

func TestBuildSecretFileErrors(t *testing.T) {
	for name, path := range map[string]string{"missing": "/secrets/none", "a directory": "/secrets"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			mkdirs(t, f.root+"/secrets")
			cfg := f.load(t)
			cfg.Secrets.Files = map[string]string{"db": f.root + path}
			if p, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("Build = %+v, %v; want an error matching ErrConfig", p, err)
			}
		})
	}
}

func TestBuildReadOnly(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	mkdirs(t, f.proj+"/build", f.proj+"/out/dist")
	writeFile(t, f.proj+"/.devsandbox.toml", "")
	cfg := f.load(t)
	cfg.Sandbox.ReadOnly = true
	cfg.Sandbox.WritableDirs = []string{"build", "out/dist"}
	p, _ := f.build(t, cfg)
	if !p.ReadOnly {
		t.Error("Plan.ReadOnly is false")
	}
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind ro $PROJ -> $PROJ (project (read-only))",
		"bind rw $PROJ/build -> $PROJ/build (sandbox.writable_dirs)",
		"bind rw $PROJ/out/dist -> $PROJ/out/dist (sandbox.writable_dirs)",
		"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
		"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
		"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
		"bind ro $PROJ/.devsandbox.toml -> $PROJ/.devsandbox.toml (project config)",
	)...))
}

// TestBuildReadOnlyMountPoints: a directory of a read-only project bound onto itself
// only to be a mount point (it holds a file host tools run, or one the git config
// includes) keeps the mode it has without that bind: read-only, or read-write under a
// sandbox.writable_dirs entry. The files in it stay read-only either way. Each goes
// right after the mount it is seen through, so a writable_dirs entry below it
// (gitinc/sub) stays on top. Before, the mount point was read-write, last: the sandbox
// could add files to .cursor on the host.
func TestBuildReadOnlyMountPoints(t *testing.T) {
	for _, c := range []struct {
		name     string
		writable []string
		want     []string
	}{
		{"read-only", nil, []string{
			"bind ro $PROJ -> $PROJ (project (read-only))",
			"bind ro $PROJ/gitinc -> $PROJ/gitinc (holds a file git on the host obeys)",
			"bind ro $PROJ/gitinc/sub -> $PROJ/gitinc/sub (holds a file git on the host obeys)",
			"bind ro $PROJ/.cursor -> $PROJ/.cursor (holds files run by tools on the host)",
			"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind ro $PROJ/gitinc/sub/extra -> $PROJ/gitinc/sub/extra (included by git config)",
			"bind ro $PROJ/.cursor/mcp.json -> $PROJ/.cursor/mcp.json (run by tools on the host)",
			"bind ro $PROJ/crates/a/rust-toolchain.toml -> $PROJ/crates/a/rust-toolchain.toml (run by tools on the host)",
		}},
		{"writable_dirs", []string{".cursor", "crates", "gitinc/sub"}, []string{
			"bind ro $PROJ -> $PROJ (project (read-only))",
			"bind ro $PROJ/gitinc -> $PROJ/gitinc (holds a file git on the host obeys)",
			"bind rw $PROJ/.cursor -> $PROJ/.cursor (sandbox.writable_dirs)",
			"bind rw $PROJ/crates -> $PROJ/crates (sandbox.writable_dirs)",
			"bind rw $PROJ/crates/a -> $PROJ/crates/a (holds a masked or protected path)",
			"bind rw $PROJ/gitinc/sub -> $PROJ/gitinc/sub (sandbox.writable_dirs)",
			"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind ro $PROJ/gitinc/sub/extra -> $PROJ/gitinc/sub/extra (included by git config)",
			"bind ro $PROJ/.cursor/mcp.json -> $PROJ/.cursor/mcp.json (run by tools on the host)",
			"bind ro $PROJ/crates/a/rust-toolchain.toml -> $PROJ/crates/a/rust-toolchain.toml (run by tools on the host)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			gitRepo(t, f.proj)
			writeFile(t, f.proj+"/.git/config", "[core]\n[include]\n\tpath = ../gitinc/sub/extra\n")
			writeFile(t, f.proj+"/gitinc/sub/extra", "[user]\n")
			writeFile(t, f.proj+"/.cursor/mcp.json", "{}\n")
			writeFile(t, f.proj+"/crates/a/rust-toolchain.toml", "[toolchain]\n")
			cfg := f.load(t)
			cfg.Sandbox.ReadOnly = true
			cfg.Sandbox.WritableDirs = c.writable
			p, _ := f.build(t, cfg)
			equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts, c.want...)...))
		})
	}
}

func TestBuildWritableDirErrors(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, f *fixture){
		"missing":                    func(*testing.T, *fixture) {},
		"a file":                     func(t *testing.T, f *fixture) { writeFile(t, f.proj+"/build", "") },
		"a symlink inside":           func(t *testing.T, f *fixture) { mkdirs(t, f.proj+"/real"); symlink(t, "real", f.proj+"/build") },
		"a symlink to outside":       func(t *testing.T, f *fixture) { symlink(t, f.home, f.proj+"/build") },
		"a symlink to a missing dir": func(t *testing.T, f *fixture) { symlink(t, "nowhere", f.proj+"/build") },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			setup(t, f)
			cfg := f.load(t)
			cfg.Sandbox.ReadOnly = true
			cfg.Sandbox.WritableDirs = []string{"build"}
			if p, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("Build = %+v, %v; want an error matching ErrConfig", p, err)
			}
		})
	}
}

// TestBuildWritableDirThroughSymlink: a writable dir reached through a symlinked parent
// is outside the project just as much as a symlinked writable dir is.
func TestBuildWritableDirThroughSymlink(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/outside/sub")
	symlink(t, f.root+"/outside", f.proj+"/link")
	cfg := f.load(t)
	cfg.Sandbox.ReadOnly = true
	cfg.Sandbox.WritableDirs = []string{"link/sub"}
	if p, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("Build = %v, %v; want an error matching ErrConfig", p, err)
	}
}

func TestBuildUserBinds(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/ro", f.root+"/rw", f.root+"/data", f.home+"/.m2")
	cfg := f.load(t)
	cfg.Sandbox.ROBinds = []string{f.root + "/ro", f.home + "/.m2"}
	cfg.Sandbox.RWBinds = []string{f.root + "/rw"}
	cfg.Sandbox.HostMounts = []config.Mount{
		{Source: f.root + "/data", Dest: "/mnt/data", ReadOnly: true},
		{Source: f.root + "/rw", Dest: "/mnt/rw"},
	}
	p, _ := f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		"bind ro $ROOT/ro -> $ROOT/ro (sandbox.ro_binds)",
		"bind ro $HOME/.m2 -> $HOME/.m2 (sandbox.ro_binds)",
		"bind rw $ROOT/rw -> $ROOT/rw (sandbox.rw_binds)",
		"bind ro $ROOT/data -> /mnt/data (sandbox.host_mounts)",
		"bind rw $ROOT/rw -> /mnt/rw (sandbox.host_mounts)",
	)...))
}

func TestBuildUserBindMissing(t *testing.T) {
	for name, set := range map[string]func(c *config.Config, missing string){
		"ro_binds":    func(c *config.Config, m string) { c.Sandbox.ROBinds = []string{m} },
		"rw_binds":    func(c *config.Config, m string) { c.Sandbox.RWBinds = []string{m} },
		"host_mounts": func(c *config.Config, m string) { c.Sandbox.HostMounts = []config.Mount{{Source: m, Dest: "/mnt/x"}} },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.load(t)
			set(cfg, f.root+"/missing")
			if p, _, err := f.tryBuild(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("Build = %+v, %v; want an error matching ErrConfig", p, err)
			}
		})
	}
}

// TestBuildUserBindInProject: a host mount whose destination lies in the project must
// come after the project mount, or the project covers it.
func TestBuildUserBindInProject(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/datasets", f.proj+"/data")
	cfg := f.load(t)
	cfg.Sandbox.HostMounts = []config.Mount{{Source: f.root + "/datasets", Dest: f.proj + "/data", ReadOnly: true}}
	p, _ := f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		"bind ro $ROOT/datasets -> $PROJ/data (sandbox.host_mounts)",
	)...))
}

// TestBuildOrder: a later mount covers an earlier one, so the project comes after the
// sandbox home (it usually lies below it) and every mask after the project.
func TestBuildOrder(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	maskTree(t, f)
	mkdirs(t, f.root+"/ro")
	writeFile(t, f.home+"/.gitconfig", "")
	cfg := f.load(t)
	cfg.Sandbox.ROBinds = []string{f.root + "/ro"}
	mkdirs(t, f.home+"/.ssh")
	p, _ := f.build(t, cfg)
	index := func(why string) []int {
		var is []int
		for i, m := range p.Mounts {
			if m.Why == why {
				is = append(is, i)
			}
		}
		return is
	}
	home, proj, masks, hides := index("sandbox home"), index("project"), index("sandbox.mask_files"), index("sandbox.hide_paths")
	if len(home) != 1 || len(proj) != 1 || len(masks) == 0 || len(hides) == 0 {
		t.Fatalf("home %v, project %v, masks %v, hides %v in\n%s", home, proj, masks, hides, mountLines(p.Mounts))
	}
	if home[0] != 0 || proj[0] < home[0] || masks[0] < proj[0] || hides[0] < home[0] {
		t.Errorf("order: home %v, project %v, masks %v, hides %v in\n%s", home, proj, masks, hides, mountLines(p.Mounts))
	}
	for _, i := range index("git hooks") {
		if i < proj[0] {
			t.Errorf("git hooks mount %d comes before the project mount %d", i, proj[0])
		}
	}
}

// TestBuildPlan checks the fields Build derives from the configuration and request.
func TestBuildPlan(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	mkdirs(t, f.proj+"/sub")
	cfg := f.load(t)
	cfg.Egress.Mode = "none"
	p, _, err := Build(cfg, tools.Default(), probe(f.proj+"/sub"), Request{TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	state := f.home + "/.local/state/devsandbox/" + p.Project.Name
	want := isolator.Plan{
		Project:     isolator.Project{Dir: f.proj, ID: p.Project.ID, Name: "app-" + p.Project.ID},
		Workdir:     f.proj + "/sub",
		User:        isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: f.home, Shell: "/bin/bash"},
		SandboxHome: f.home + "/.local/share/devsandbox/" + p.Project.Name + "/home",
		StateDir:    state,
		EmptyFile:   f.home + "/.local/state/devsandbox/empty",
		Self:        selfPath,
		PrivateDirs: []string{f.home + "/.local/share/devsandbox/" + p.Project.Name + "/home"},
		Tmp:         isolator.Tmp{Kind: "session", Dir: state + "/tmp"},
		Egress:      egress.Rules{Mode: egress.None},
		Limits:      isolator.Limits{Pids: 4096, DiskReserve: 1 << 30}, // the defaults; the syscall policy is strict
		Command:     []string{"/bin/bash"},                             // no command: the user's shell
		TTY:         true,
		Subdir:      isolator.SubdirFiles{Names: subdirExecuted, Why: hostExecutedWhy},
		Git: isolator.GitWatch{
			Dirs: []string{f.proj + "/.git"}, Index: f.proj + "/.git/index",
			ScanMask: []string{".env", ".env.*"}, ScanSkip: []string{".git", "node_modules"}, ScanCache: state + "/maskscan.cache",
			Quarantine: state + "/quarantine", PointerRecord: state + "/git-pointers",
		},
	}
	got := *p
	got.System, got.Mounts, got.Env, got.Secrets, got.HostEnv, got.Tripwires = isolator.SystemView{}, nil, nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Plan:\n%+v\nwant\n%+v", got, want)
	}
	// Tripwires: absent host-run files are watched, the git dir's first (its
	// pointers are checked by package watch, Plan.Git).
	var tw []string
	for _, w := range p.Tripwires {
		tw = append(tw, fmt.Sprintf("%s %v", strings.TrimPrefix(w.Path, f.proj+"/"), w.Quarantine))
	}
	if want := []string{".git/info/lefthook-remotes true", ".devsandbox.toml false", ".claude/settings.json false"}; !reflect.DeepEqual(tw[:3], want) {
		t.Errorf("tripwires %q, want first %q", tw, want)
	}

	f.environ = []string{"HOME=" + f.home, "USER=u"} // no SHELL
	cfg = f.load(t)
	cfg.Sandbox.Tmp = "shm"
	p, _, err = Build(cfg, tools.Default(), probe(f.proj), Request{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (isolator.Tmp{Kind: "shm", Dir: "/dev/shm/devsandbox-1000"}); p.Tmp != want {
		t.Errorf("Tmp = %+v, want %+v", p.Tmp, want)
	}
	if want := []string{"/bin/sh"}; !reflect.DeepEqual(p.Command, want) {
		t.Errorf("Command = %q, want %q", p.Command, want)
	}
}

// A tool's variable naming a location below the home carries the location's path below
// it (EnvVar.HomeRel), where the tool's bindings land in a sandbox home elsewhere; one
// outside the home, a value that is no path, and a user's passthrough carry none.
func TestBuildToolEnvHomeRel(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/claude-work", f.root+"/opt/codex")
	cfg := f.load(t, "CLAUDE_CONFIG_DIR="+f.home+"/claude-work/", "ANTHROPIC_BASE_URL=http://127.0.0.1:9", "CODEX_HOME="+f.root+"/opt/codex",
		"GOPATH="+f.home+"/go")
	cfg.Egress.Mode = "none"
	on := true
	cfg.Tools["claude"] = config.ToolConfig{Enabled: &on}
	cfg.Tools["codex"] = config.ToolConfig{Enabled: &on}
	cfg.Env.Passthrough = []string{"GOPATH"}
	p, _ := f.build(t, cfg)
	got := map[string]string{}
	for _, e := range p.Env {
		got[e.Name] = e.HomeRel
	}
	for n, want := range map[string]string{"CLAUDE_CONFIG_DIR": "claude-work", "ANTHROPIC_BASE_URL": "", "CODEX_HOME": "", "GOPATH": ""} {
		if rel, ok := got[n]; !ok || rel != want {
			t.Errorf("%s: HomeRel %q (in the plan: %v), want %q", n, rel, ok, want)
		}
	}
}
