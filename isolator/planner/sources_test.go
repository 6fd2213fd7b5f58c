package planner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// A user bind's source is resolved once and the resolved path is bound; a link to a
// hidden or credential path, or into a Docker socket, is refused, naming the rule.
func TestUserBindResolvedAndHeldToMasks(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/.ssh", f.home+"/.aws", f.root+"/data")
	writeFile(t, f.home+"/.config/gh/hosts.yml", "token")
	symlink(t, f.home+"/.ssh", f.proj+"/keys")
	symlink(t, f.home+"/.aws", f.proj+"/aws")
	symlink(t, f.home+"/.config/gh/hosts.yml", f.proj+"/gh")
	symlink(t, f.root+"/data", f.proj+"/data")
	for name, tt := range map[string]struct {
		set  func(c *config.Config)
		want string // "" for success
	}{
		"--mount of a link to ~/.ssh": {func(c *config.Config) {
			c.Sandbox.HostMounts = []config.Mount{{Source: f.proj + "/keys", Dest: "/mnt/k"}}
		}, "sandbox.hide_paths"},
		"rw_binds of a link to ~/.aws":  {func(c *config.Config) { c.Sandbox.RWBinds = []string{f.proj + "/aws"} }, "sandbox.hide_paths"},
		"ro_binds of a link to a token": {func(c *config.Config) { c.Sandbox.ROBinds = []string{f.proj + "/gh"} }, "a credential path"},
		"ro_binds of ~/.ssh itself":     {func(c *config.Config) { c.Sandbox.ROBinds = []string{f.home + "/.ssh"} }, "sandbox.hide_paths"},
		"a link to a plain directory": {func(c *config.Config) {
			c.Sandbox.HostMounts = []config.Mount{{Source: f.proj + "/data", Dest: "/mnt/d"}}
		}, ""},
		"devsandbox's state": {func(c *config.Config) { c.Sandbox.ROBinds = []string{f.home + "/.local/state/devsandbox"} }, "devsandbox's own"},
		"a link to devsandbox's own state": {func(c *config.Config) {
			c.Sandbox.HostMounts = []config.Mount{{Source: f.home + "/.local/state/devsandbox", Dest: "/mnt/s"}}
		}, "devsandbox's own"},
	} {
		t.Run(name, func(t *testing.T) {
			mkdirs(t, f.home+"/.local/state/devsandbox")
			cfg := f.load(t)
			tt.set(cfg)
			p, _, err := f.tryBuild(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Build: %v", err)
			case tt.want == "":
				want := f.expand(p, "bind rw $ROOT/data -> /mnt/d (sandbox.host_mounts)")[0]
				if !slices.Contains(mountLines(p.Mounts), want) {
					t.Fatalf("mounts %q; want %q (the resolved source)", mountLines(p.Mounts), want)
				}
			case !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Build error = %v; want ErrConfig naming %q", err, tt.want)
			}
		})
	}
}

// A bind that moves a directory holding protected paths gets their masks at their new
// place: /run's Docker socket, a hidden path, devsandbox's state.
func TestUserBindMovedKeepsMasks(t *testing.T) {
	f := newFixture(t)
	run := f.root + "/hostrun"
	writeFile(t, run+"/docker.sock", "")
	writeFile(t, run+"/secret/key", "k")
	mkdirs(t, f.home+"/.local/state/devsandbox", f.home+"/.kube")
	cfg := f.load(t, "DOCKER_HOST=unix://"+run+"/docker.sock")
	cfg.Sandbox.HidePaths = append(cfg.Sandbox.HidePaths, run+"/secret")
	cfg.Sandbox.HostMounts = []config.Mount{{Source: run, Dest: "/mnt/run"}, {Source: f.home, Dest: "/mnt/home", ReadOnly: true}}
	p, _ := f.build(t, cfg)
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, " in sandbox.host_mounts)") {
			got = append(got, l)
		}
	}
	equalLines(t, "masks", got, f.expand(p,
		"maskdir /mnt/run/secret (sandbox.hide_paths in sandbox.host_mounts)",
		"maskfile /mnt/run/docker.sock (a Docker socket in sandbox.host_mounts)",
		"maskdir /mnt/home/.kube (sandbox.hide_paths in sandbox.host_mounts)",
		"maskdir /mnt/home/.local/state/devsandbox (devsandbox's own configuration and state in sandbox.host_mounts)",
	))
	// sandbox.docker_socket shares the socket wherever it is.
	cfg.Sandbox.DockerSocket = true
	p, _ = f.build(t, cfg)
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "docker.sock") {
			t.Errorf("docker_socket = true, yet %s", l)
		}
	}
}

// A tool binding whose source is a symlink, or lies below one, is left out with a
// warning naming the link: a bind follows it on the host.
func TestToolSourceSymlinkLeftOut(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.root+"/dotfiles/gitconfig", "[user]\n")
	symlink(t, f.root+"/dotfiles/gitconfig", f.home+"/.gitconfig")
	writeFile(t, f.home+"/.claude/CLAUDE.md", "be nice")
	symlink(t, "../../../run/docker.sock", f.home+"/.claude/AGENTS.override.md")
	symlink(t, f.home+"/.ssh", f.home+"/.claude/local")
	cfg := f.load(t)
	on := true
	cfg.Tools["git"] = config.ToolConfig{Enabled: &on}
	cfg.Tools["claude"] = config.ToolConfig{Enabled: &on}
	p, warns, err := Build(cfg, tools.NewRegistry(tools.Git(), tools.Claude()), probe(f.proj), Request{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "(tool ") {
			got = append(got, l)
		}
	}
	key := strings.NewReplacer("/", "-", ".", "-").Replace(f.proj)
	equalLines(t, "tool mounts", got, f.expand(p,
		"bind rw $DATA/tools/"+filepath.Base(p.PrivateDirs[len(p.PrivateDirs)-3])+" -> ~/.claude (tool claude)",
		"bind ro,optional $HOME/.claude/CLAUDE.md -> ~/.claude/CLAUDE.md (tool claude)",
		"bind rw $HOME/.claude/projects/"+key+" -> ~/.claude/projects/"+key+" (tool claude)",
		"bind rw $DATA/tools/"+filepath.Base(p.PrivateDirs[len(p.PrivateDirs)-1])+" -> ~/.claude/projects/"+key+"/memory (tool claude)",
	))
	for _, link := range []string{"/.gitconfig", "/.claude/AGENTS.override.md", "/.claude/local"} {
		found := false
		for _, w := range warns {
			found = found || strings.Contains(w, f.home+link+" is a symlink")
		}
		if !found {
			t.Errorf("no warning naming %s: %q", link, warns)
		}
	}
	if _, err := os.Stat(f.home + "/.claude/projects"); err == nil {
		t.Error("Build created a directory on the host: creating is Run's")
	}
}

// TestUserBindAnchorsOwnState: a read-write bind holding devsandbox's own state two
// levels down (rw_binds = ["~/.local"], at its path or shown elsewhere) anchors the
// directory between them, right after the bind and under the mask, so that the sandbox
// cannot rename ~/.local/state away and make a state directory of its own where the
// next launch looks; a read-only one needs none.
func TestUserBindAnchorsOwnState(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/local/state/devsandbox", f.root+"/local/share")
	cfg := f.load(t, "XDG_STATE_HOME="+f.root+"/local/state")
	cfg.Sandbox.RWBinds = []string{f.root + "/local"}
	cfg.Sandbox.HostMounts = []config.Mount{{Source: f.root + "/local", Dest: "/mnt/rw"}, {Source: f.root + "/local", Dest: "/mnt/ro", ReadOnly: true}}
	p, _ := f.build(t, cfg)
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "/local") || strings.Contains(l, "/mnt/") {
			got = append(got, l)
		}
	}
	equalLines(t, "mounts", got, f.expand(p,
		"bind rw $ROOT/local -> $ROOT/local (sandbox.rw_binds)",
		"bind rw $ROOT/local/state -> $ROOT/local/state (holds a masked or protected path)",
		"bind rw $ROOT/local -> /mnt/rw (sandbox.host_mounts)",
		"bind rw $ROOT/local/state -> /mnt/rw/state (holds a masked or protected path)",
		"bind ro $ROOT/local -> /mnt/ro (sandbox.host_mounts)",
		"maskdir $ROOT/local/state/devsandbox (devsandbox's own configuration and state in sandbox.rw_binds)",
		"maskdir /mnt/rw/state/devsandbox (devsandbox's own configuration and state in sandbox.host_mounts)",
		"maskdir /mnt/ro/state/devsandbox (devsandbox's own configuration and state in sandbox.host_mounts)",
	))
}
