package tools

import (
	"errors"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

const home = "/home/u"

// fakeHost is a host with home /home/u holding files (path → content; directories
// are entries too), no symlinks, and the commands cmds on PATH: "name" is found at
// /usr/bin/name, "name=/path" at path.
func fakeHost(files map[string]string, cmds ...string) Host {
	paths := map[string]string{}
	for _, c := range cmds {
		n, p, ok := strings.Cut(c, "=")
		if !ok {
			p = "/usr/bin/" + n
		}
		paths[n] = p
	}
	return Host{
		Home: home,
		Env:  map[string]string{},
		Exists: func(p string) bool {
			_, ok := files[p]
			return ok
		},
		LookPath: func(n string) (string, bool) {
			p, ok := paths[n]
			return p, ok
		},
		EvalSymlinks: func(p string) (string, error) { return p, nil },
		ReadFile: func(p string) ([]byte, error) {
			if c, ok := files[p]; ok {
				return []byte(c), nil
			}
			return nil, errors.New("not found")
		},
		ReadDir: func(dir string) ([]string, error) {
			var names []string
			for p := range files {
				if path.Dir(p) == dir {
					names = append(names, path.Base(p))
				}
			}
			sort.Strings(names)
			return names, nil
		},
	}
}

// withLinks makes the host resolve each key of links to its value.
func withLinks(h Host, links map[string]string) Host {
	h.EvalSymlinks = func(p string) (string, error) {
		if r, ok := links[p]; ok {
			return r, nil
		}
		return p, nil
	}
	return h
}

// withEnv sets host variables given as NAME=VALUE.
func withEnv(h Host, vars ...string) Host {
	h.Env = map[string]string{}
	for _, v := range vars {
		n, val, _ := strings.Cut(v, "=")
		h.Env[n] = val
	}
	return h
}

func files(paths ...string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		m[p] = ""
	}
	return m
}

func TestDetect(t *testing.T) {
	tests := []struct {
		tool Tool
		host Host
		want bool
	}{
		{Shell(), fakeHost(nil), true},

		{Git(), fakeHost(nil), false},
		{Git(), fakeHost(nil, "git"), true},
		{Git(), fakeHost(files(home + "/.gitconfig")), true},
		{Git(), fakeHost(files(home + "/.config/git/config")), true},
		{Git(), withEnv(fakeHost(files("/x/git/config")), "XDG_CONFIG_HOME=/x"), true},

		{SSH(), fakeHost(nil), false},
		{SSH(), fakeHost(nil, "ssh"), true},

		{GH(), fakeHost(nil), false},
		{GH(), fakeHost(nil, "gh"), true},
		{GH(), fakeHost(files(home + "/.config/gh")), true},
		{GH(), withEnv(fakeHost(files(home+"/ghc")), "GH_CONFIG_DIR="+home+"/ghc"), true},

		{Go(), fakeHost(nil), false},
		{Go(), fakeHost(nil, "go"), true},
		{Go(), fakeHost(files(home + "/.config/go/env")), true},
		{Go(), fakeHost(files(home + "/go")), false}, // a GOPATH alone is no Go install

		{Node(), fakeHost(nil), false},
		{Node(), fakeHost(nil, "node"), true},
		{Node(), fakeHost(nil, "npm"), true},
		{Node(), fakeHost(files(home + "/.nvm")), true},
		{Node(), fakeHost(files(home + "/.volta")), true},
		{Node(), fakeHost(files(home + "/.local/share/fnm")), true},
		{Node(), withEnv(fakeHost(files("/opt/nvm")), "NVM_DIR=/opt/nvm"), true},
		{Node(), fakeHost(files(home + "/.npm")), false}, // a cache is no install

		{Python(), fakeHost(nil), false},
		{Python(), fakeHost(nil, "python3"), true},
		{Python(), fakeHost(nil, "uv"), true},
		{Python(), fakeHost(nil, "pipx"), true},
		{Python(), fakeHost(files(home + "/.pyenv")), true},

		{Cargo(), fakeHost(nil), false},
		{Cargo(), fakeHost(nil, "cargo"), true},
		{Cargo(), fakeHost(nil, "rustup"), true},
		{Cargo(), fakeHost(files(home + "/.cargo")), true},
		{Cargo(), fakeHost(files(home + "/.rustup")), true},
		{Cargo(), withEnv(fakeHost(files("/opt/cargo")), "CARGO_HOME=/opt/cargo"), true},

		{Mise(), fakeHost(nil), false},
		{Mise(), fakeHost(nil, "mise"), true},
		{Mise(), fakeHost(files(home + "/.config/mise")), true},
		{Mise(), fakeHost(files(home + "/.local/share/mise")), true},

		{Nvim(), fakeHost(nil), false},
		{Nvim(), fakeHost(nil, "nvim"), true},
		{Nvim(), fakeHost(files(home + "/.config/nvim")), true},
		{Nvim(), withEnv(fakeHost(files(home+"/.config/lazy")), "NVIM_APPNAME=lazy"), true},
		{Nvim(), withEnv(fakeHost(files(home+"/.config/nvim")), "NVIM_APPNAME=lazy"), false},

		{Claude(), fakeHost(nil), false},
		{Claude(), fakeHost(nil, "claude"), true},
		{Claude(), fakeHost(files(home + "/.claude")), true},
		{Claude(), fakeHost(files(home + "/.claude.json")), true},
		{Claude(), withEnv(fakeHost(files(home+"/cc")), "CLAUDE_CONFIG_DIR="+home+"/cc"), true},

		{Codex(), fakeHost(nil), false},
		{Codex(), fakeHost(nil, "codex"), true},
		{Codex(), fakeHost(files(home + "/.codex")), true},
		{Codex(), fakeHost(files(home + "/.claude")), false},
		{Codex(), withEnv(fakeHost(files("/data/codex")), "CODEX_HOME=/data/codex"), true},

		{Gemini(), fakeHost(nil), false},
		{Gemini(), fakeHost(nil, "gemini"), true},
		{Gemini(), fakeHost(files(home + "/.gemini")), true},

		{OpenCode(), fakeHost(nil), false},
		{OpenCode(), fakeHost(nil, "opencode"), true},
		{OpenCode(), fakeHost(files(home + "/.config/opencode")), true},
		{OpenCode(), fakeHost(files(home + "/.local/share/opencode")), true},

		{Aider(), fakeHost(nil), false},
		{Aider(), fakeHost(nil, "aider"), true},
		{Aider(), fakeHost(files(home + "/.aider.conf.yml")), true},
		{Aider(), fakeHost(files(home + "/.aider")), true},
	}
	for i, tt := range tests {
		if got := tt.tool.Detect(tt.host); got != tt.want {
			t.Errorf("%d: %s.Detect = %v, want %v", i, tt.tool.Name, got, tt.want)
		}
	}
}

// everywhere is a host where every path exists and every command is in ~/.local/bin,
// some of them links to awkward places: into credential directories, into a project,
// outside the home.
func everywhere(vars ...string) Host {
	h := withEnv(fakeHost(nil), vars...)
	h.Exists = func(string) bool { return true }
	h.LookPath = func(n string) (string, bool) { return home + "/.local/bin/" + n, true }
	h.ReadFile = func(string) ([]byte, error) { return []byte("Host x\n  IdentityFile ~/.ssh/id_rsa\n"), nil }
	h.Env["SSH_AUTH_SOCK"] = "/run/user/1000/ssh.sock"
	h.Project = home + "/src/app"
	return withLinks(h, map[string]string{
		home + "/.local/bin/claude":   home + "/.local/share/claude/versions/2.0.0",
		home + "/.local/bin/codex":    home + "/.cargo/credentials.toml",
		home + "/.local/bin/gemini":   home + "/.ssh/gemini",
		home + "/.local/bin/aider":    home + "/.local/share/pipx/venvs/aider-chat/bin/aider",
		home + "/.local/bin/nvim":     home + "/src/app/bin/nvim",
		home + "/.local/bin/go":       home + "/.local/go/bin/go",
		home + "/.local/bin/opencode": "/opt/opencode/bin/opencode",
		home + "/.local/bin/node":     home + "/.docker/node",
		home + "/.local/bin/mise":     home + "/.config/gh/mise",
		home + "/.local/bin/uv":       home,
	})
}

// deniedCredentials are the home-relative credential paths no binding may name, lie
// in or hold; gh may bind its hosts.yml read-only.
var deniedCredentials = []string{".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".docker/config.json", ".ssh/id_*", ".aws", ".netrc", ".git-credentials", ".config/gh/hosts.yml"}

// namesCredential reports whether the home-relative path rel is a denied path, lies
// in one or holds one ("" is the home itself, which holds them all).
func namesCredential(rel string) (string, bool) {
	for _, d := range deniedCredentials {
		if strings.HasPrefix(d, rel+"/") || rel == "" {
			return d, true
		}
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			if ok, _ := path.Match(d, p); ok {
				return d, true
			}
		}
	}
	return "", false
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// mayWrite are the tools allowed read-write bindings, and how many.
var mayWrite = map[string]int{"ssh": 1, "claude": 2, "codex": 1, "gemini": 1, "qwen": 1}

func TestRegistryInvariants(t *testing.T) {
	r := Default()
	var all []string
	for _, tl := range r.Tools() {
		all = append(all, tl.Env...)
	}
	pathVars := func(v string) []string {
		var out []string
		for _, n := range all {
			out = append(out, n+"="+v)
		}
		return append(out, "XDG_CONFIG_HOME="+v+"/cfg", "XDG_DATA_HOME="+v+"/data")
	}
	hosts := map[string]Host{
		"defaults":          everywhere(),
		"vars at the home":  everywhere(pathVars(home)...),
		"vars at /":         everywhere(pathVars("/")...),
		"vars outside home": everywhere(pathVars("/srv/x")...),
		"vars in .ssh":      everywhere(pathVars(home + "/.ssh")...),
	}
	seen := map[string]bool{}
	secrets, env := map[string]string{}, map[string]string{}
	for _, tl := range r.Tools() {
		if tl.Name == "" || seen[tl.Name] {
			t.Errorf("tool name %q empty or not unique", tl.Name)
		}
		seen[tl.Name] = true
		if tl.Detect == nil || tl.Bindings == nil || tl.Description == "" {
			t.Errorf("%s: Detect, Bindings and Description are required", tl.Name)
		}
		for _, n := range tl.Env {
			if !envName.MatchString(n) {
				t.Errorf("%s: env %q is not a variable name", tl.Name, n)
			}
			env[n] = tl.Name
		}
		for _, n := range tl.Secrets {
			if !envName.MatchString(n) {
				t.Errorf("%s: secret %q is not a variable name", tl.Name, n)
			}
			secrets[n] = tl.Name
		}
		for _, e := range tl.Egress {
			if err := config.ValidEgressEntry(e); err != nil {
				t.Errorf("%s: egress %q: %v", tl.Name, e, err)
			}
		}
		for _, k := range tl.Keys {
			if !slices.Contains(tl.Secrets, k.Env) {
				t.Errorf("%s: key %s is not one of its secrets", tl.Name, k.Env)
			}
			if k.BaseURLEnv != "" && k.Endpoints != "" {
				t.Errorf("%s: key %s has both a base-URL variable and endpoints of its configuration", tl.Name, k.Env)
			}
			if k.Endpoints != "" && k.Endpoints.Doc() == "" {
				t.Errorf("%s: key %s: its endpoints' files %q are not documented", tl.Name, k.Env, k.Endpoints)
			}
			if k.IgnoredEnv != "" && k.IgnoredEnv == k.BaseURLEnv {
				t.Errorf("%s: key %s both follows and ignores %s", tl.Name, k.Env, k.IgnoredEnv)
			}
		}
		for hn, h := range hosts {
			checkBindings(t, tl, hn, h)
		}
	}
	for n, tn := range secrets {
		if en, ok := env[n]; ok {
			t.Errorf("%s is a secret of %s and plain env of %s: it would be passed as plain env", n, tn, en)
		}
	}
}

func checkBindings(t *testing.T, tl Tool, hn string, h Host) {
	t.Helper()
	rw := 0
	for _, b := range tl.Bindings(h) {
		where := tl.Name + " on " + hn + ": " + b.Source + " -> " + b.Dest + b.HomeRelativeDest
		if (b.Dest == "") == (b.HomeRelativeDest == "") {
			t.Errorf("%s: exactly one of Dest and HomeRelativeDest must be set", where)
		}
		if b.Dest != "" && (!path.IsAbs(b.Dest) || b.Dest == home || strings.HasPrefix(b.Dest, home+"/")) {
			t.Errorf("%s: Dest must be absolute and outside the home (use HomeRelativeDest)", where)
		}
		if r := b.HomeRelativeDest; r != "" && (path.IsAbs(r) || path.Clean(r) != r || r == ".." || strings.HasPrefix(r, "../")) {
			t.Errorf("%s: HomeRelativeDest must be a clean relative path", where)
		}
		if b.Mode == Own {
			if b.Source != "" {
				t.Errorf("%s: an own directory has no Source", where)
			}
			continue
		}
		if b.Content == nil && !path.IsAbs(b.Source) {
			t.Errorf("%s: Source must be absolute", where)
		}
		if b.Content == nil && (b.Source == "/" || strings.HasPrefix(home+"/", b.Source+"/")) {
			t.Errorf("%s: binds the home or a parent of it", where)
		}
		if b.Mode == RW {
			rw++
		}
		var rels []string // the home-relative paths the binding names
		if b.HomeRelativeDest != "" {
			rels = append(rels, b.HomeRelativeDest)
		}
		if b.Content == nil && (b.Source == home || strings.HasPrefix(b.Source, home+"/")) {
			rels = append(rels, strings.TrimPrefix(strings.TrimPrefix(b.Source, home), "/"))
		}
		for _, r := range rels {
			if d, ok := namesCredential(r); ok && !(tl.Name == "gh" && b.Mode == RO && r == ".config/gh/hosts.yml") {
				t.Errorf("%s: names the credential path %s", where, d)
			}
			if tl.Name != "ssh" && (r == ".ssh" || strings.HasPrefix(r, ".ssh/")) {
				t.Errorf("%s: only the ssh tool binds below ~/.ssh", where)
			}
		}
	}
	if rw > mayWrite[tl.Name] {
		t.Errorf("%s on %s: %d read-write bindings, want at most %d", tl.Name, hn, rw, mayWrite[tl.Name])
	}
}

func TestRegistryNames(t *testing.T) {
	r := Default()
	want := []string{"aider", "amp", "cargo", "claude", "codex", "copilot", "crush", "cursor", "gemini", "gh", "git",
		"go", "goose", "mise", "node", "nvim", "oh-my-zsh", "opencode", "pi", "powerlevel10k", "python", "qwen", "shell",
		"ssh", "starship", "tmux", "zellij"}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if _, ok := r.Lookup("claude"); !ok {
		t.Fatal("claude not in default registry")
	}
	if _, ok := r.Lookup("docker"); ok {
		t.Fatal("lookup of an unknown tool succeeded")
	}
	if a, b := Default().Tools(), Default().Tools(); a[0].Name != "shell" || a[len(a)-1].Name != b[len(b)-1].Name {
		t.Fatal("default order is not stable")
	}
}

func TestSSHOverlayProxyCommandComesFirst(t *testing.T) {
	got := string(SSHConfigOverlay([]byte("Host gh\n  ProxyJump bastion\n"), "/run/devsandbox/init --connect=127.0.0.1:3128 %h %p"))
	want := "# Generated by devsandbox from ~/.ssh/config. Private keys are not available in the\n" +
		"# sandbox: authentication goes through the forwarded ssh agent.\n" +
		"# Connections go through the egress proxy (CONNECT), which applies the egress policy.\n" +
		"ProxyCommand /run/devsandbox/init --connect=127.0.0.1:3128 %h %p\n" +
		"Host gh\n  ProxyJump bastion\n"
	if got != want {
		t.Fatalf("overlay:\n%s\nwant:\n%s", got, want)
	}
}
