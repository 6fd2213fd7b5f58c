package config

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestProjectMayNotLoosen trusts a project file that loosens one protected key, or
// sets a key only the user config may set, and checks the error names the project
// file, the line and the key.
func TestProjectMayNotLoosen(t *testing.T) {
	tests := []struct {
		name    string
		user    string // the user file
		project string
		line    int
		key     string
	}{
		// Keys only the user config may set.
		{"mask_allow", "", "[sandbox]\nmask_allow = [\".env.local\"]\n", 2, "sandbox.mask_allow"},
		{"mask_skip", "", "[sandbox]\nmask_files = [\"*.pem\"]\nmask_skip = [\"src\"]\n", 3, "sandbox.mask_skip"},
		{"ro_binds", "", "[sandbox]\nro_binds = [\"~/.ssh\"]\n", 2, "sandbox.ro_binds"},
		{"rw_binds", "", "[sandbox]\nrw_binds = [\"~\"]\n", 2, "sandbox.rw_binds"},
		{"host_mounts", "", "[sandbox]\nhost_mounts = [\"~/.aws:/aws\"]\n", 2, "sandbox.host_mounts"},
		{"system_binds host", "", "[sandbox]\nsystem_binds = [\"host\"]\n", 2, "sandbox.system_binds"},
		{"system_binds path", "", "[sandbox]\nsystem_binds = [\"/opt\"]\n", 2, "sandbox.system_binds"},
		{"passthrough", "", "[env]\npassthrough = [\"AWS_SECRET_ACCESS_KEY\"]\n", 2, "env.passthrough"},
		{"secrets.env", "", "[secrets]\nenv = [\"GITHUB_TOKEN\"]\n", 2, "secrets.env"},
		{"secrets.files", "", "\n[secrets.files]\nKEY = \"~/.ssh/id_ed25519\"\n", 2, "secrets.files"},
		{"egress.allow", "", "[egress]\nallow = [\"evil.example\"]\n", 2, "egress.allow"},
		{"proxy.credentials", "", "[[proxy.credentials]]\nhost = \"evil.example\"\nheader = \"Authorization\"\nvalue_env = \"GITHUB_TOKEN\"\n", 1, "proxy.credentials"},
		{"docker.host", "", "[docker]\nhost = \"tcp://evil.example:2375\"\n", 2, "docker.host"},
		{"krun.podman_socket", "", "[krun]\npodman_socket = \"/tmp/evil.sock\"\n", 2, "krun.podman_socket"},
		{"krun.runtime", "", "[krun]\nruntime = \"runc\"\n", 2, "krun.runtime"},
		// Protections a project file may only tighten.
		{"isolator away from krun", "isolator = \"krun\"\n", "isolator = \"bwrap\"\n", 1, "isolator"},
		{"isolator back to auto", "isolator = \"bwrap\"\n", "isolator = \"auto\"\n", 1, "isolator"},
		{"isolator sideways", "isolator = \"bwrap\"\n", "isolator = \"docker\"\n", 1, "isolator"},
		{"mode off", "", "[sandbox]\nmode = \"off\"\n", 2, "sandbox.mode"},
		{"mode auto", "", "[sandbox]\nmode = \"auto\"\n", 2, "sandbox.mode"},
		{"mode off over auto", "[sandbox]\nmode = \"auto\"\n", "sandbox.mode = \"off\"\n", 1, "sandbox.mode"},
		{"environment dev", "[sandbox]\nenvironment = \"prod\"\n", "[sandbox]\nenvironment = \"dev\"\n", 2, "sandbox.environment"},
		{"read_only off", "[sandbox]\nread_only = true\n", "[sandbox]\nread_only = false\n", 2, "sandbox.read_only"},
		{"bind_host_cache", "", "[sandbox]\nbind_host_cache = true\n", 2, "sandbox.bind_host_cache"},
		{"docker_socket", "", "[sandbox]\n\ndocker_socket = true\n", 3, "sandbox.docker_socket"},
		{"terminal_clipboard", "", "[sandbox]\nterminal_clipboard = true\n", 2, "sandbox.terminal_clipboard"},
		{"passthrough_all", "", "env = { passthrough_all = true }\n", 1, "env.passthrough_all"},
		{"early_start over the user's false", "[sandbox]\nearly_start = false\n", "[sandbox]\nearly_start = true\n", 2, "sandbox.early_start"},
		{"egress open", "[egress]\nmode = \"none\"\n", "[egress]\nmode = \"open\"\n", 2, "egress.mode"},
		{"proxy default allow", "[proxy]\ndefault = \"deny\"\n", "[proxy]\ndefault = \"allow\"\n", 2, "proxy.default"},
		{"proxy mitm", "", "[proxy]\nmitm = true\n", 2, "proxy.mitm"},
		{"git_ssh", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "[proxy]\ngit_ssh = true\n", 2, "proxy.git_ssh"},
		{"agent_bind", "", "[docker]\nagent_bind = true\n", 2, "docker.agent_bind"},
		{"agent_bind over the user's off", "[docker]\nagent_bind = false\n", "[docker]\nimage = \"proj:1\"\nagent_bind = true\n", 3, "docker.agent_bind"},
		{"git_push widened", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "[proxy]\ngit_push = [\"agent/*\", \"main\"]\n", 2, "proxy.git_push"},
		{"tool enabled", "", "[tools.ssh]\nenabled = true\n", 2, "tools.ssh.enabled"},
		{"tool enabled over disabled", "[tools.ssh]\nenabled = false\n", "[tools.ssh]\nenabled = true\n", 2, "tools.ssh.enabled"},
		{"tool secrets", "[tools.gh]\nsecrets = false\n", "[tools.gh]\nsecrets = true\n", 2, "tools.gh.secrets"},
		{"tool key back in", "[tools.claude]\nkey = \"proxy\"\n", "[tools.claude]\nkey = \"env\"\n", 2, "tools.claude.key"},
		{"pids above the default", "", "[limits]\npids = 100000\n", 2, "limits.pids"},
		{"pids off", "", "[limits]\npids = 0\n", 2, "limits.pids"},
		{"memory above the user's", "[limits]\nmemory = \"1g\"\n", "[limits]\nmemory = \"2g\"\n", 2, "limits.memory"},
		{"cpus above the user's", "[limits]\ncpus = 2\n", "[limits]\ncpus = 4\n", 2, "limits.cpus"},
		{"memory through the old key", "[limits]\nmemory = \"1g\"\n", "[docker]\nmemory = \"8g\"\n", 2, "docker.memory"},
		{"tmp_size above the user's", "[sandbox]\ntmp_size = \"1g\"\n", "[sandbox]\ntmp_size = \"2g\"\n", 2, "sandbox.tmp_size"},
		{"tmp_size unbounded", "[sandbox]\ntmp_size = \"1g\"\n", "[sandbox]\ntmp_size = \"\"\n", 2, "sandbox.tmp_size"},
		{"disk_reserve below the default", "", "[sandbox]\ndisk_reserve = \"100m\"\n", 2, "sandbox.disk_reserve"},
		{"disk_reserve off", "", "[sandbox]\ndisk_reserve = \"0\"\n", 2, "sandbox.disk_reserve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t)
			if tt.user != "" {
				writeUserFile(t, home, tt.user)
			}
			dir, file, host := project(t, home, environ, tt.project)
			if err := updateTrust(host, func(r *trustRecords) {
				// Trust itself refuses the user-only keys; record the file directly so
				// that Load's own check is what is tested.
				r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte(tt.project))}
			}); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir, UID: 1000, GID: 1000})
			if err == nil {
				t.Fatal("Load accepted the project file")
			}
			ce := asConfigError(t, err)
			if ce.File != file || ce.Line != tt.line || ce.Key != tt.key {
				t.Errorf("got File %q Line %d Key %q, want line %d key %q (%v)", ce.File, ce.Line, ce.Key, tt.line, tt.key, err)
			}
			if !errors.Is(err, ErrProjectRestricted) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not match ErrProjectRestricted and ErrInvalid", err)
			}
		})
	}
}

// TestProjectMayTighten checks the same keys set to values at least as strict as the
// user's, and the free keys.
func TestProjectMayTighten(t *testing.T) {
	tests := []struct{ name, user, project string }{
		{"isolator under auto", "", "isolator = \"docker\"\n"},
		{"isolator to krun", "isolator = \"bwrap\"\n", "isolator = \"krun\"\n"},
		{"isolator unchanged", "isolator = \"bwrap\"\n", "isolator = \"bwrap\"\n"},
		{"mode enforce over off", "[sandbox]\nmode = \"off\"\n", "[sandbox]\nmode = \"enforce\"\n"},
		{"mode auto over off", "[sandbox]\nmode = \"off\"\n", "[sandbox]\nmode = \"auto\"\n"},
		{"prod", "", "[sandbox]\nenvironment = \"prod\"\n"},
		{"read_only", "", "[sandbox]\nread_only = true\nwritable_dirs = [\"build\"]\n"},
		{"same bools", "", "[sandbox]\nbind_host_cache = false\ndocker_socket = false\n[env]\npassthrough_all = false\n"},
		{"cache off over on", "[sandbox]\nbind_host_cache = true\n", "[sandbox]\nbind_host_cache = false\n"},
		{"clipboard off over on", "[sandbox]\nterminal_clipboard = true\n", "[sandbox]\nterminal_clipboard = false\n"},
		{"early_start off", "", "[sandbox]\nearly_start = false\n"},
		{"egress none", "", "[egress]\nmode = \"none\"\n"},
		{"tmp_size", "", "[sandbox]\ntmp_size = \"512m\"\n"},
		{"tmp_size below the user's", "[sandbox]\ntmp_size = \"1g\"\n", "[sandbox]\ntmp_size = \"512m\"\n"},
		{"disk_reserve above the default", "", "[sandbox]\ndisk_reserve = \"4g\"\n"},
		{"disk_reserve over the user's none", "[sandbox]\ndisk_reserve = \"0\"\n", "[sandbox]\ndisk_reserve = \"1m\"\n"},
		{"a deny entry", "", "[egress]\ndeny = [\"10.0.0.0/8\"]\n"},
		{"agent_bind off", "", "[docker]\nagent_bind = false\n"},
		{"agent_bind off over on", "[docker]\nagent_bind = true\n", "[docker]\nagent_bind = false\n"},
		{"agent_bind on, the user's repeated", "[docker]\nagent_bind = true\n", "[docker]\nagent_bind = true\n"},
		{"proxy deny", "", "[proxy]\ndefault = \"deny\"\nmitm = false\n"},
		{"a push policy", "[proxy]\nmitm = true\n", "[proxy]\ngit_push = [\"agent/*\"]\ngit_ssh = false\n"},
		{"the user's push policy repeated", "[proxy]\nmitm = true\ngit_push = [\"agent/*\", \"refs/tags/v*\"]\ngit_ssh = true\n", "[proxy]\ngit_push = [\"agent/*\"]\ngit_ssh = false\n"},
		{"masks added", "", "[sandbox]\nhide_paths = [\"~/.config/gh\"]\nmask_files = [\"*.pem\"]\n"},
		{"tool disabled", "", "[tools.ssh]\nenabled = false\nsecrets = false\n"},
		{"tool enabled by the user", "[tools.ssh]\nenabled = true\n", "[tools.ssh]\nenabled = true\nsecrets = true\n"},
		{"tool key held outside", "", "[tools.claude]\nkey = \"proxy\"\n"},
		{"tool key repeated", "[tools.claude]\nkey = \"proxy\"\n", "[tools.claude]\nkey = \"proxy\"\n"},
		{"inside the sandbox", "", "[sandbox]\ntmp = \"tmpfs\"\n[env.set]\nGOFLAGS = \"-mod=mod\"\n" +
			"[docker]\nimage = \"proj:1\"\nhome = \"/home/dev\"\nkeep_container = true\n" +
			"[krun]\nimage = \"proj:1\"\ncpus = 4\nmemory_mib = 8192\n" +
			"[limits]\npids = 512\ncpus = 4\nmemory = \"8g\"\n"},
		{"a relaxed syscall group", "", "[sandbox]\nrelax_syscalls = [\"io_uring\"]\n"},
		{"lower limits than the user's", "[limits]\npids = 1024\nmemory = \"8g\"\ncpus = 4\n", "[limits]\npids = 100\nmemory = \"512m\"\ncpus = 0.5\n"},
		{"empty lists", "", "[sandbox]\nmask_allow = []\nro_binds = []\n[env]\npassthrough = []\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t)
			if tt.user != "" {
				writeUserFile(t, home, tt.user)
			}
			dir, file, host := project(t, home, environ, tt.project)
			mustTrust(t, host, file)
			c, warnings := mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir})
			if len(c.Files) == 0 || c.Files[len(c.Files)-1] != file || len(warnings) != 0 {
				t.Errorf("project file not applied: files %q, warnings %q", c.Files, warnings)
			}
		})
	}
}

// TestProjectRestrictionMessages shows whole messages: what is wrong and where the
// value belongs instead.
func TestProjectRestrictionMessages(t *testing.T) {
	home, environ := testHome(t)
	user := writeUserFile(t, home, "[sandbox]\nmode = \"auto\"\n")
	dir, file, host := project(t, home, environ, "")
	tests := []struct{ project, want string }{{
		"[sandbox]\nmode = \"off\"\n",
		file + `:2: sandbox.mode: "off" is looser than "auto" (from ` + user + `); a project file may only make the sandbox stricter: set it in your user config (` + user + `) or with --mode`,
	}, {
		"[sandbox]\ndocker_socket = true\n",
		file + `:2: sandbox.docker_socket: true is looser than false (the default); a project file may only make the sandbox stricter: set it in your user config (` + user + `)`,
	}, {
		"[docker]\nagent_bind = true\n",
		file + `:2: docker.agent_bind: true is looser than false (the default); a project file may only make the sandbox stricter: set it in your user config (` + user + `)`,
	}, {
		"[egress]\nallow = [\"a.example\"]\n",
		file + `:2: egress.allow: a project file may not set this, since it opens network destinations: set it in your user config (` + user + `) or with --allow`,
	}, {
		"[tools.ssh]\nenabled = true\n",
		file + `:2: tools.ssh.enabled: enabling a tool exposes its host files; a project file may only disable tools: set it in your user config (` + user + `)`,
	}}
	for _, tt := range tests {
		if err := os.WriteFile(file, []byte(tt.project), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := updateTrust(host, func(r *trustRecords) {
			r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte(tt.project))}
		}); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir})
		if err == nil || err.Error() != tt.want {
			t.Errorf("got  %v\nwant %s", err, tt.want)
		}
	}
}

// TestTrustRefusesUserOnlyKeys: a file that can never apply is not trusted.
func TestTrustRefusesUserOnlyKeys(t *testing.T) {
	home, environ := testHome(t)
	_, file, host := project(t, home, environ, "[egress]\nmode = \"none\"\n\n[secrets]\nenv = [\"GITHUB_TOKEN\"]\n")
	_, err := Trust(host, file, trustTime)
	ce := asConfigError(t, err)
	if ce.File != file || ce.Line != 5 || ce.Key != "secrets.env" || !errors.Is(err, ErrProjectRestricted) {
		t.Errorf("got %#v (%v)", ce, err)
	}
	if st, err := CheckTrust(host, file); st != Untrusted || err != nil {
		t.Errorf("CheckTrust = %v, %v", st, err)
	}
}

// TestProjectMITMOffWithCredentials: a project file may turn MITM off, but not under
// the user's HTTPS credentials, which need it: the error names the project file's line.
func TestProjectMITMOffWithCredentials(t *testing.T) {
	home, environ := testHome(t)
	writeUserFile(t, home, "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"api.github.com\"\nheader = \"Authorization\"\nvalue_env = \"GITHUB_TOKEN\"\n")
	doc := "[proxy]\n\nmitm = false\n"
	dir, file, host := project(t, home, environ, doc)
	if err := updateTrust(host, func(r *trustRecords) { r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte(doc))} }); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir, UID: 1000, GID: 1000})
	if err == nil {
		t.Fatal("no error")
	}
	ce := asConfigError(t, err)
	if ce.File != file || ce.Line != 3 || ce.Key != "proxy.mitm" || !errors.Is(err, ErrInvalid) {
		t.Errorf("got %v", err)
	}
}

// TestGitPushNeedsProxyAndMITM: a push policy the proxy could not enforce is an error
// at the key that made it so: proxy.git_push without proxy.mitm, or with an egress
// mode that reaches servers past the proxy, whichever layer came last.
func TestGitPushNeedsProxyAndMITM(t *testing.T) {
	open, allowlist, none := "open", "allowlist", "none"
	for _, tt := range []struct {
		name, user, project string
		flags               Flags
		file                string // "user", "project", or "" for a flag
		line                int
		key, source, want   string
	}{
		{"without mitm", "[proxy]\ngit_push = [\"agent/*\"]\n", "", Flags{}, "user", 2, "proxy.git_push", "", "proxy.git_push (from USER) needs proxy.mitm = true"},
		{"open mode in the file", "[egress]\nmode = \"open\"\n[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "", Flags{}, "user", 5, "proxy.git_push", "", `proxy.git_push (from USER) needs every push to pass through the proxy, but egress.mode is "open" (from USER)`},
		{"--egress=open", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "", Flags{Egress: &open}, "", 0, "egress.mode", "flag --egress", `egress.mode is "open" (from flag --egress)`},
		{"--egress=allowlist", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "", Flags{Egress: &allowlist}, "", 0, "egress.mode", "flag --egress", `"allowlist"`},
		{"project turns mitm off", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "[proxy]\nmitm = false\n", Flags{}, "project", 2, "proxy.mitm", "", "needs proxy.mitm = true"},
		{"project policy, user without mitm", "", "[proxy]\ngit_push = [\"agent/*\"]\n", Flags{}, "project", 2, "proxy.git_push", "", "set proxy.mitm = true in your user config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t)
			user := writeUserFile(t, home, tt.user)
			opts := LoadOptions{Environ: environ, Flags: tt.flags, UID: 1000, GID: 1000}
			var proj string
			if tt.project != "" {
				var dir, file string
				var host Host
				dir, file, host = project(t, home, environ, tt.project)
				if err := updateTrust(host, func(r *trustRecords) { r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte(tt.project))} }); err != nil {
					t.Fatal(err)
				}
				opts.ProjectDir, proj = dir, file
			}
			_, _, err := Load(opts)
			if err == nil {
				t.Fatal("no error")
			}
			ce := asConfigError(t, err)
			want := map[string]string{"user": user, "project": proj, "": ""}[tt.file]
			tt.want = strings.ReplaceAll(tt.want, "USER", user)
			if ce.File != want || ce.Line != tt.line || ce.Key != tt.key || ce.Source != tt.source || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %#v: %v\nwant file %q line %d key %q source %q, saying %q", ce, err, want, tt.line, tt.key, tt.source, tt.want)
			}
		})
	}
	// Where nothing is pushed, or everything goes through the proxy, it holds.
	for _, mode := range []*string{nil, &none} {
		home, environ := testHome(t)
		writeUserFile(t, home, "[proxy]\nmitm = true\ngit_push = [\"agent/*\", \"refs/tags/v*\"]\n")
		c, _ := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Egress: mode}, UID: 1000, GID: 1000})
		if !slices.Equal(c.Proxy.GitPush, []string{"agent/*", "refs/tags/v*"}) || c.Proxy.GitSSH {
			t.Errorf("proxy: %+v", c.Proxy)
		}
	}
}

// TestAgentBindKey: docker.agent_bind is off unless the user turns it on (their file
// or --config); a project file may leave it on or turn it off, never on. The
// refusal names the file, the line and the key.
func TestAgentBindKey(t *testing.T) {
	home, environ := testHome(t)
	c, _ := mustLoad(t, LoadOptions{Environ: environ})
	if c.Docker.AgentBind || c.Origins["docker.agent_bind"] != "default" {
		t.Errorf("default: AgentBind %v from %q, want false from the default", c.Docker.AgentBind, c.Origins["docker.agent_bind"])
	}
	user := writeUserFile(t, home, "[docker]\nagent_bind = true\n")
	c, _ = mustLoad(t, LoadOptions{Environ: environ})
	if !c.Docker.AgentBind || c.Origins["docker.agent_bind"] != user {
		t.Errorf("user file: AgentBind %v from %q, want true from %s", c.Docker.AgentBind, c.Origins["docker.agent_bind"], user)
	}
	dir, file, host := project(t, home, environ, "[docker]\nagent_bind = false\n")
	mustTrust(t, host, file)
	if c, _ = mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir}); c.Docker.AgentBind {
		t.Error("a project file's agent_bind = false did not turn the user's true off")
	}
	// The user's off, the project's on: refused, naming the project file and key.
	writeUserFile(t, home, "")
	doc := "[docker]\n\nagent_bind = true\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateTrust(host, func(r *trustRecords) {
		r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte(doc))}
	}); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir, UID: 1000, GID: 1000})
	if err == nil {
		t.Fatal("Load accepted a project file that turns docker.agent_bind on")
	}
	if ce := asConfigError(t, err); ce.File != file || ce.Line != 3 || ce.Key != "docker.agent_bind" || !errors.Is(err, ErrProjectRestricted) {
		t.Errorf("got File %q Line %d Key %q (%v), want %s:3 docker.agent_bind, ErrProjectRestricted", ce.File, ce.Line, ce.Key, err, file)
	}
	// Trust refuses it too, before it can apply.
	if _, err := Trust(host, file, trustTime); err == nil || !strings.Contains(err.Error(), "docker.agent_bind") {
		t.Errorf("Trust of a file that turns docker.agent_bind on: %v, want a refusal naming the key", err)
	}
}
