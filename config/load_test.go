package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLoadDefaults(t *testing.T) {
	home, environ := testHome(t)
	c, warnings := mustLoad(t, LoadOptions{Environ: environ})
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Isolator: "auto",
		Sandbox: Sandbox{
			Mode: "enforce", Environment: "dev",
			HidePaths: []string{home + "/.ssh", home + "/.aws", home + "/.gnupg", home + "/.config/gcloud",
				home + "/.azure", home + "/.kube", home + "/.docker", home + "/.netrc"},
			MaskFiles:   []string{".env", ".env.*"},
			MaskSkip:    []string{".git", "node_modules"},
			Tmp:         "session",
			DiskReserve: "1g",
			EarlyStart:  true,
		},
		Env:     Env{Set: map[string]string{}},
		Secrets: Secrets{Files: map[string]string{}},
		Tools:   map[string]ToolConfig{},
		Egress:  Egress{Mode: "proxy", LoopbackEntries: "error"},
		Proxy:   Proxy{Default: "allow"},
		Docker:  Docker{Image: "devsandbox/default:dev", Home: "/home/alice"},
		Krun:    Krun{Image: "devsandbox/default:dev", Runtime: "krun", CPUs: 2, MemoryMiB: 2048},
		Limits:  Limits{Pids: 4096},
		Host:    host,
		Origins: map[string]string{},
	}
	for _, k := range []string{
		"isolator", "sandbox.mode", "sandbox.environment", "sandbox.read_only", "sandbox.hide_paths",
		"sandbox.mask_files", "sandbox.mask_skip", "sandbox.tmp", "sandbox.disk_reserve", "sandbox.bind_host_cache",
		"sandbox.docker_socket", "sandbox.terminal_clipboard", "sandbox.early_start", "env.passthrough_all", "egress.mode", "egress.loopback_entries", "proxy.default", "proxy.mitm", "proxy.git_ssh",
		"docker.image", "docker.home", "docker.keep_container", "docker.agent_bind", "krun.image", "krun.runtime", "krun.cpus",
		"krun.memory_mib", "limits.pids",
	} {
		want.Origins[k] = "default"
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
}

func TestLoadLayers(t *testing.T) {
	const user = `isolator = "bwrap"
[sandbox]
mode = "auto"
tmp = "tmpfs"
[limits]
memory = "4g"
cpus = 2
`
	const explicit = `[sandbox]
mode = "off"
[krun]
cpus = 8
`
	str := func(s string) *string { return &s }
	type value struct{ got, want, origin string }
	tests := []struct {
		name     string
		explicit bool // pass the explicit file as --config
		env      []string
		flags    Flags
		want     func(c *Config, user, explicit string) map[string]value
	}{{
		name: "user file over defaults",
		want: func(c *Config, user, _ string) map[string]value {
			return map[string]value{
				"isolator":            {c.Isolator, "bwrap", user},
				"sandbox.mode":        {c.Sandbox.Mode, "auto", user},
				"sandbox.tmp":         {c.Sandbox.Tmp, "tmpfs", user},
				"limits.memory":       {c.Limits.Memory, "4g", user},
				"sandbox.environment": {c.Sandbox.Environment, "dev", "default"},
			}
		},
	}, {
		name:     "--config replaces the user file",
		explicit: true,
		want: func(c *Config, _, explicit string) map[string]value {
			return map[string]value{
				"isolator":      {c.Isolator, "auto", "default"},
				"sandbox.mode":  {c.Sandbox.Mode, "off", explicit},
				"sandbox.tmp":   {c.Sandbox.Tmp, "session", "default"},
				"limits.memory": {c.Limits.Memory, "", ""},
			}
		},
	}, {
		name: "env over files",
		env:  []string{"DEVSANDBOX_ISOLATOR=docker"},
		want: func(c *Config, _, _ string) map[string]value {
			return map[string]value{"isolator": {c.Isolator, "docker", "env DEVSANDBOX_ISOLATOR"}}
		},
	}, {
		name:     "flags over env and files",
		explicit: true,
		env:      []string{"DEVSANDBOX_ISOLATOR=docker"},
		flags:    Flags{Isolator: str("krun"), Mode: str("auto"), Egress: str("none")},
		want: func(c *Config, _, _ string) map[string]value {
			return map[string]value{
				"isolator":     {c.Isolator, "krun", "flag --isolator"},
				"sandbox.mode": {c.Sandbox.Mode, "auto", "flag --mode"},
				"egress.mode":  {c.Egress.Mode, "none", "flag --egress"},
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t, tt.env...)
			userFile := writeUserFile(t, home, user)
			explicitFile := writeFile(t, filepath.Join(home, "explicit.toml"), explicit)
			wantFiles := []string{userFile}
			if tt.explicit {
				tt.flags.ConfigFile = explicitFile
				wantFiles = []string{explicitFile}
			}
			c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: tt.flags, Writable: nowhere})
			for key, v := range tt.want(c, userFile, explicitFile) {
				if v.got != v.want || c.Origins[key] != v.origin {
					t.Errorf("%s = %q from %q, want %q from %q", key, v.got, c.Origins[key], v.want, v.origin)
				}
			}
			if !reflect.DeepEqual(c.Files, wantFiles) {
				t.Errorf("Files = %q, want %q", c.Files, wantFiles)
			}
		})
	}
}

func TestLoadMergesListsAndTables(t *testing.T) {
	home, environ := testHome(t)
	file := writeFile(t, filepath.Join(home, "c.toml"), `
[sandbox]
hide_paths = ["~/.secrets", "~/.ssh", "~/.secrets"]
[env]
passthrough = ["LC_*", "EDITOR"]
[env.set]
A = "1"
B = "2"
[secrets]
env = ["TOKEN"]
[egress]
allow = ["a.com", "b.com"]
[tools.git]
enabled = false
[tools.ssh]
secrets = false
`)
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{
		ConfigFile: file,
		Allow:      []string{"b.com", "c.com:443"},
		Env:        []string{"B=3", "C=4", "TOKEN", "OTHER"},
	}, Writable: nowhere})
	wantHide := []string{home + "/.ssh", home + "/.aws", home + "/.gnupg", home + "/.config/gcloud",
		home + "/.azure", home + "/.kube", home + "/.docker", home + "/.netrc", home + "/.secrets"}
	checks := []struct {
		key       string
		got, want any
		origin    string
	}{
		{"sandbox.hide_paths", c.Sandbox.HidePaths, wantHide, file},
		{"sandbox.mask_files", c.Sandbox.MaskFiles, []string{".env", ".env.*"}, "default"},
		{"env.passthrough", c.Env.Passthrough, []string{"LC_*", "EDITOR"}, file},
		{"egress.allow", c.Egress.Allow, []string{"a.com", "b.com", "c.com:443"}, "flag --allow"},
		{"secrets.env", c.Secrets.Env, []string{"TOKEN", "OTHER"}, "flag --env"},
		{"env.set.A", c.Env.Set, map[string]string{"A": "1", "B": "3", "C": "4"}, file},
		{"env.set.B", nil, nil, "flag --env"},
		{"env.set.C", nil, nil, "flag --env"},
		{"tools.git.enabled", c.Tools, map[string]ToolConfig{"git": {Enabled: new(false)}, "ssh": {Secrets: new(false)}}, file},
		{"tools.ssh.secrets", nil, nil, file},
		{"tools.git.secrets", nil, nil, ""},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.key, ch.got, ch.want)
		}
		if c.Origins[ch.key] != ch.origin {
			t.Errorf("origin of %s = %q, want %q", ch.key, c.Origins[ch.key], ch.origin)
		}
	}
}

func TestSystemBindsHostAloneAcrossLayers(t *testing.T) {
	home, environ := testHome(t)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	c := defaults(host)
	first := writeFile(t, filepath.Join(home, "1.toml"), "[sandbox]\nsystem_binds = [\"host\"]\n")
	second := writeFile(t, filepath.Join(home, "2.toml"), "[sandbox]\n\nsystem_binds = [\"/opt\"]\n")
	if err := applyFile(c, first, true); err != nil {
		t.Fatal(err)
	}
	err = applyFile(c, second, true)
	ce := asConfigError(t, err)
	if ce.File != second || ce.Line != 3 || ce.Key != "sandbox.system_binds" || !errors.Is(err, ErrInvalid) {
		t.Errorf("got %#v", ce)
	}
}

func TestLoadExpandsHome(t *testing.T) {
	home, environ := testHome(t)
	file := writeFile(t, filepath.Join(home, "c.toml"), `
[sandbox]
hide_paths = ["~", "~/a/../b/"]
ro_binds = ["~/ro"]
rw_binds = ["/abs//rw"]
host_mounts = ["~/src:~/dst:ro", "/x:/y"]
system_binds = ["~/sys"]
writable_dirs = ["./build/"]
[secrets.files]
TOKEN = "~/token"
[krun]
podman_socket = "~/podman.sock"
[proxy]
mitm = true
[[proxy.credentials]]
host = "*.example.com"
header = "Authorization"
value_file = "~/cred"
format = "Bearer {}"
`)
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{ConfigFile: file}, Writable: nowhere})
	got := []any{c.Sandbox.HidePaths[8:], c.Sandbox.ROBinds, c.Sandbox.RWBinds, c.Sandbox.HostMounts,
		c.Sandbox.SystemBinds, c.Sandbox.WritableDirs, c.Secrets.Files, c.Krun.PodmanSocket, c.Proxy.Credentials}
	want := []any{
		[]string{home, home + "/b"}, []string{home + "/ro"}, []string{"/abs/rw"},
		[]Mount{{Source: home + "/src", Dest: home + "/dst", ReadOnly: true, Origin: file + ":6"}, {Source: "/x", Dest: "/y", Origin: file + ":6"}},
		[]string{home + "/sys"}, []string{"build"}, map[string]string{"TOKEN": home + "/token"}, home + "/podman.sock",
		[]Credential{{Host: "*.example.com", Header: "Authorization", ValueFile: home + "/cred", Format: "Bearer {}"}},
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("got %#v, want %#v", got[i], want[i])
		}
	}
}

func TestLoadMissingFiles(t *testing.T) {
	home, environ := testHome(t)
	if c, _ := mustLoad(t, LoadOptions{Environ: environ}); len(c.Files) != 0 {
		t.Errorf("Files = %q without a user file", c.Files)
	}
	missing := filepath.Join(home, "nope.toml")
	_, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{ConfigFile: missing}, Writable: nowhere})
	ce := asConfigError(t, err)
	if ce.File != missing || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("got %#v (%v)", ce, err)
	}
	// A user file that is there but unreadable as a file is an error, not skipped.
	dir := filepath.Join(home, ".config", "devsandbox", "config.toml")
	writeFile(t, filepath.Join(dir, "x"), "")
	_, _, err = Load(LoadOptions{Environ: environ})
	if ce := asConfigError(t, err); ce.File != dir {
		t.Errorf("got %#v (%v)", ce, err)
	}
}

func TestLoadImage(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		isolator, file           string
		dockerImage, krunImage   string
		dockerOrigin, krunOrigin string
	}{
		{"auto", "", "img", "img", "flag --image", "default"},
		{"bwrap", "", "img", "img", "flag --image", "default"},
		{"docker", "[krun]\nimage = \"k\"\n", "img", "k", "flag --image", "FILE"},
		{"krun", "[docker]\nimage = \"d\"\n", "d", "img", "FILE", "flag --image"},
	}
	for _, tt := range tests {
		home, environ := testHome(t)
		file := writeUserFile(t, home, tt.file)
		c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Isolator: &tt.isolator, Image: str("img")}})
		for _, o := range []*string{&tt.dockerOrigin, &tt.krunOrigin} {
			if *o == "FILE" {
				*o = file
			}
		}
		if c.Docker.Image != tt.dockerImage || c.Krun.Image != tt.krunImage ||
			c.Origins["docker.image"] != tt.dockerOrigin || c.Origins["krun.image"] != tt.krunOrigin {
			t.Errorf("%s: docker.image %q from %q, krun.image %q from %q", tt.isolator,
				c.Docker.Image, c.Origins["docker.image"], c.Krun.Image, c.Origins["krun.image"])
		}
	}
}

func TestLoadKrunImageFollowsDocker(t *testing.T) {
	home, environ := testHome(t)
	writeUserFile(t, home, "[docker]\nimage = \"mine:1\"\n")
	c, _ := mustLoad(t, LoadOptions{Environ: environ})
	if c.Krun.Image != "mine:1" {
		t.Errorf("krun.image = %q", c.Krun.Image)
	}
}

func TestLoadProdEnforces(t *testing.T) {
	home, environ := testHome(t)
	file := writeUserFile(t, home, "[sandbox]\nenvironment = \"prod\"\n")
	mode := "auto"
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Mode: &mode}})
	if c.Sandbox.Mode != "enforce" || c.Origins["sandbox.mode"] != file {
		t.Errorf("mode %q from %q", c.Sandbox.Mode, c.Origins["sandbox.mode"])
	}
}

func TestLoadWarnings(t *testing.T) {
	home, environ := testHome(t)
	writeUserFile(t, home, "[env]\npassthrough_all = true\n")
	_, warnings := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Allow: []string{"a.com"}, Egress: strp("open")}})
	want := []string{
		"env.passthrough_all is on: the sandbox sees every host environment variable, secrets included",
		`egress.allow (from flag --allow) has no effect while egress.mode is "open" (from flag --egress): the sandbox uses the host's network unfiltered`,
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings = %q", warnings)
	}
}

// Allow and deny entries do nothing under egress.mode "none" either: a run says so
// once, naming where they come from, when they are set where the mode is or on the
// command line. A user config's allow list under a project's (or a flag's) "none" is
// a deliberate tightening: no warning, or every run of such a project would have one.
func TestLoadWarnsIdleEgressRules(t *testing.T) {
	const quiet = ""
	tests := []struct {
		name, user string
		flags      Flags
		want       string // USER is the user config's path
	}{
		{name: "none and allow in one file", user: "[egress]\nmode = \"none\"\nallow = [\"a.com\"]\n",
			want: `egress.allow (from USER) has no effect while egress.mode is "none" (from USER): the sandbox reaches no network but its own loopback`},
		{name: "none, allow and deny in one file", user: "[egress]\nmode = \"none\"\nallow = [\"a.com\"]\ndeny = [\"b.com\"]\n",
			want: `egress.allow (from USER) and egress.deny (from USER) have no effect while egress.mode is "none" (from USER): the sandbox reaches no network but its own loopback`},
		{name: "--allow with --egress=none", flags: Flags{Allow: []string{"a.com"}, Egress: strp("none")},
			want: `egress.allow (from flag --allow) has no effect while egress.mode is "none" (from flag --egress): the sandbox reaches no network but its own loopback`},
		{name: "--allow with none in the user config", user: "[egress]\nmode = \"none\"\n", flags: Flags{Allow: []string{"a.com"}},
			want: `egress.allow (from flag --allow) has no effect while egress.mode is "none" (from USER): the sandbox reaches no network but its own loopback`},
		{name: "the user's allow list under --egress=none", user: "[egress]\nallow = [\"a.com\"]\n", flags: Flags{Egress: strp("none")}, want: quiet},
		{name: "the user's allow list under --egress=open", user: "[egress]\nallow = [\"a.com\"]\n", flags: Flags{Egress: strp("open")},
			want: `egress.allow (from USER) has no effect while egress.mode is "open" (from flag --egress): the sandbox uses the host's network unfiltered`},
		{name: "none alone", user: "[egress]\nmode = \"none\"\n", want: quiet},
		{name: "allowlist with entries", user: "[egress]\nmode = \"allowlist\"\nallow = [\"a.com\"]\n", want: quiet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t)
			user := writeUserFile(t, home, tt.user)
			_, warnings := mustLoad(t, LoadOptions{Environ: environ, Flags: tt.flags})
			var want []string
			if tt.want != "" {
				want = []string{strings.ReplaceAll(tt.want, "USER", user)}
			}
			if !slices.Equal(warnings, want) {
				t.Errorf("warnings\n%q\nwant\n%q", warnings, want)
			}
		})
	}
}

func strp(s string) *string { return &s }

// The deprecated docker.cpus and docker.memory set the limits, with a warning naming
// the file and the new key; a [limits] key in the same file wins over its alias.
func TestLimitAliases(t *testing.T) {
	home, environ := testHome(t)
	user := writeUserFile(t, home, "[docker]\ncpus = 1.5\nmemory = \"2g\"\n[limits]\nmemory = \"1g\"\n")
	c, warnings := mustLoad(t, LoadOptions{Environ: environ})
	if c.Limits.CPUs != 1.5 || c.Limits.Memory != "1g" || c.Limits.MemoryBytes() != 1<<30 {
		t.Errorf("limits %+v", c.Limits)
	}
	if c.Origins["limits.cpus"] != user+" (docker.cpus)" || c.Origins["limits.memory"] != user {
		t.Errorf("origins %q %q", c.Origins["limits.cpus"], c.Origins["limits.memory"])
	}
	want := []string{
		"docker.memory (in " + user + ") is deprecated and ignored: limits.memory in the same file sets the limit; remove it",
		"docker.cpus (in " + user + ") is deprecated: it sets limits.cpus; rename it",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	// krun sizes its VM from the limits unless its own keys are set.
	if c.Krun.CPUs != 2 || c.Krun.MemoryMiB != 1024 || c.Origins["krun.memory_mib"] != user {
		t.Errorf("krun %d vCPUs, %d MiB (origin %q)", c.Krun.CPUs, c.Krun.MemoryMiB, c.Origins["krun.memory_mib"])
	}
}

func TestLimitFlagsAndValidation(t *testing.T) {
	home, environ := testHome(t)
	_ = home
	pids, mem, cpus := 64, "512m", 0.5
	c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Pids: &pids, Memory: &mem, CPUs: &cpus}})
	if c.Limits != (Limits{Pids: 64, Memory: "512m", CPUs: 0.5}) || c.Origins["limits.pids"] != "flag --pids" || c.Origins["limits.cpus"] != "flag --cpus" {
		t.Errorf("limits %+v, origins %q", c.Limits, c.Origins)
	}
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{Pids: ptr(3)}, "flag --pids: 3 is not a number of tasks from 8"},
		{Flags{Memory: ptr("1k")}, `flag --memory: "1k" is less than the 6m`},
		{Flags{Memory: ptr("lots")}, `flag --memory: "lots" is not a size`},
		{Flags{CPUs: ptr(0.0)}, "flag --cpus: 0 is not greater than 0"},
	} {
		_, _, err := Load(LoadOptions{Environ: environ, Flags: tc.flags, UID: 1000, GID: 1000})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid saying %q", tc.flags, err, tc.want)
		}
	}
	_, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{ConfigFile: writeFile(t, home+"/r.toml", "[sandbox]\nrelax_syscalls = [\"ptrace\"]\n")}, Writable: nowhere, UID: 1000, GID: 1000})
	if err == nil || !strings.Contains(err.Error(), `sandbox.relax_syscalls: "ptrace" is not a syscall group (one of userns, io_uring, perf, sockets)`) {
		t.Errorf("unknown group: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
