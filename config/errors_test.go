package config

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestFileErrors checks that every class of error in a file names the file, the line
// and the key, and matches ErrInvalid (and ErrNotImplemented where it should).
func TestFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		line    int
		key     string
		notImpl bool
	}{
		{"syntax", "isolator = \n", 1, "", false},
		{"duplicate key", "isolator = \"auto\"\nisolator = \"bwrap\"\n", 2, "isolator", false},
		{"duplicate key in table", "[sandbox]\nmode = \"auto\"\nmode = \"off\"\n", 3, "sandbox.mode", false},
		{"duplicate key in array table", "[[proxy.credentials]]\nhost = \"a.com\"\n[[proxy.credentials]]\nhost = \"b.com\"\nhost = \"c.com\"\n", 5, "proxy.credentials[1].host", false},
		{"duplicate table", "[egress]\n[sandbox.x]\n[sandbox]\nx = 1\n", 4, "sandbox.x", false},
		{"unknown top-level key", "# c\nisolater = \"auto\"\n", 2, "isolater", false},
		{"unknown table", "\n\n[sandbx]\nmode = \"off\"\n", 3, "sandbx", false},
		{"unknown key in table", "[sandbox]\nmode = \"off\"\nread_onyl = true\n", 3, "sandbox.read_onyl", false},
		{"unknown key in tool", "[tools.git]\nenabled = true\nsecret = false\n", 3, "tools.git.secret", false},
		{"unknown key in array table", "[[proxy.credentials]]\nhost = \"a.com\"\nheadr = \"X\"\n", 3, "proxy.credentials.headr", false},
		{"wrong type scalar", "[sandbox]\nread_only = \"yes\"\n", 2, "sandbox.read_only", false},
		{"wrong type list entry", "[sandbox]\nhide_paths = [\n  \"/a\",\n  3,\n]\n", 4, "sandbox.hide_paths", false},
		{"wrong type list", "[egress]\nallow = \"a.com\"\n", 2, "egress.allow", false},
		{"wrong type int", "[krun]\n\ncpus = 1.5\n", 3, "krun.cpus", false},
		{"wrong type table", "env = 3\n", 1, "env", false},
		{"integer too large", "[krun]\nmemory_mib = 99999999999999999999\n", 2, "krun.memory_mib", false},
		{"bad isolator", "isolator = \"vm\"\n", 1, "isolator", false},
		{"bad mode", "[sandbox]\n\nmode = \"bogus\"\n", 3, "sandbox.mode", false},
		{"bad mode dotted at top", "sandbox.mode = \"bogus\"\n", 1, "sandbox.mode", false},
		{"bad mode inline table", "sandbox = { read_only = true,\n  mode = \"bogus\" }\n", 2, "sandbox.mode", false},
		{"bad environment", "[sandbox]\nenvironment = \"staging\"\n", 2, "sandbox.environment", false},
		{"bad tmp", "[sandbox]\ntmp = \"disk\"\n", 2, "sandbox.tmp", false},
		{"bad proxy default", "[proxy]\ndefault = \"maybe\"\n", 2, "proxy.default", false},
		{"bad egress mode", "[egress]\nmode = \"closed\"\n", 2, "egress.mode", false},
		{"egress mode", "[egress]\nmode = \"vpn\"\n", 2, "egress.mode", false},
		{"egress allow entry", "[egress]\nallow = [\n \"a.com\",\n \"b.com:99999\",\n]\n", 4, "egress.allow", false},
		{"egress deny entry", "[egress]\ndeny = [\"*\"]\n", 2, "egress.deny", false},
		{"passthrough star", "[env]\npassthrough = [\"HOME\", \"*\"]\n", 2, "env.passthrough", false},
		{"passthrough name", "[env]\npassthrough = [\"A-B\"]\n", 2, "env.passthrough", false},
		{"env.set name", "[env.set]\nOK = \"1\"\n\"BAD NAME\" = \"2\"\n", 3, "env.set.BAD NAME", false},
		{"secrets.env name", "[secrets]\nenv = [\"1TOKEN\"]\n", 2, "secrets.env", false},
		{"secrets.files name", "[secrets.files]\n\"a.b\" = \"/x\"\n", 2, "secrets.files.a.b", false},
		{"secrets.files path", "[secrets]\nfiles = { TOKEN = \"token.txt\" }\n", 2, "secrets.files.TOKEN", false},
		{"hide_paths relative", "[sandbox]\nhide_paths = [\"~/ok\",\n  \"rel\"]\n", 3, "sandbox.hide_paths", false},
		{"ro_binds relative", "[sandbox]\nro_binds = [\"~user/x\"]\n", 2, "sandbox.ro_binds", false},
		{"rw_binds relative", "[sandbox]\nrw_binds = [\"./x\"]\n", 2, "sandbox.rw_binds", false},
		{"host_mounts no dst", "[sandbox]\nhost_mounts = [\"/a\"]\n", 2, "sandbox.host_mounts", false},
		{"host_mounts bad mode", "[sandbox]\nhost_mounts = [\"/a:/b:rx\"]\n", 2, "sandbox.host_mounts", false},
		{"host_mounts relative", "[sandbox]\nhost_mounts = [\"/a:b\"]\n", 2, "sandbox.host_mounts", false},
		{"writable_dirs escape", "[sandbox]\nwritable_dirs = [\"build\", \"a/../../x\"]\n", 2, "sandbox.writable_dirs", false},
		{"writable_dirs absolute", "[sandbox]\nwritable_dirs = [\"/tmp\"]\n", 2, "sandbox.writable_dirs", false},
		{"system_binds host not alone", "[sandbox]\nsystem_binds = [\"host\", \"/opt\"]\n", 2, "sandbox.system_binds", false},
		{"system_binds relative", "[sandbox]\nsystem_binds = [\"usr\"]\n", 2, "sandbox.system_binds", false},
		{"mask glob", "[sandbox]\nmask_files = [\"[\"]\n", 2, "sandbox.mask_files", false},
		{"mask glob with slash", "[sandbox]\nmask_allow = [\"a/.env\"]\n", 2, "sandbox.mask_allow", false},
		{"mask_skip", "[sandbox]\nmask_skip = [\"..\"]\n", 2, "sandbox.mask_skip", false},
		{"docker memory", "[docker]\nmemory = \"4 GB\"\n", 2, "docker.memory", false},
		{"docker cpus zero", "[docker]\ncpus = 0\n", 2, "docker.cpus", false},
		{"docker cpus nan", "[docker]\ncpus = nan\n", 2, "docker.cpus", false},
		{"docker home", "[docker]\nhome = \"home\"\n", 2, "docker.home", false},
		{"docker home above the home", "[docker]\n\nhome = \"/\"\n", 3, "docker.home", false},
		{"docker image empty", "[docker]\nimage = \"\"\n", 2, "docker.image", false},
		{"krun cpus", "[krun]\ncpus = 0\n", 2, "krun.cpus", false},
		{"krun memory", "[krun]\nmemory_mib = -1\n", 2, "krun.memory_mib", false},
		{"krun socket", "[krun]\npodman_socket = \"podman.sock\"\n", 2, "krun.podman_socket", false},
		{"credential header missing", "[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\n\n[[proxy.credentials]]\nhost = \"b.com\"\nvalue_env = \"B\"\n", 6, "proxy.credentials[1].header", false},
		{"credential host missing", "[[proxy.credentials]]\nheader = \"X\"\nvalue_env = \"A\"\n", 1, "proxy.credentials[0].host", false},
		{"credential both values", "[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\nvalue_file = \"/f\"\n", 4, "proxy.credentials[0].value_env", false},
		{"credential no value", "[proxy]\ncredentials = [\n  { host = \"a.com\", header = \"X\" },\n]\n", 3, "proxy.credentials[0].value_env", false},
		{"credential bad host", "[proxy]\ncredentials = [\n  { host = \"a.com\", header = \"X\", value_env = \"A\" },\n  { host = \"a b\", header = \"X\", value_env = \"A\" },\n]\n", 4, "proxy.credentials[1].host", false},
		{"credential format", "[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"Authorization\"\nvalue_file = \"~/t\"\nformat = \"Bearer\"\n", 5, "proxy.credentials[0].format", false},
		{"credential header name", "[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X Y\"\nvalue_env = \"A\"\n", 3, "proxy.credentials[0].header", false},
		// HTTPS (no port, or 443) needs proxy.mitm; another port is plain HTTP and does not.
		{"credential https without mitm", "[proxy]\nmitm = false\n[[proxy.credentials]]\nhost = \"http://a.com:8080\"\nheader = \"X\"\nvalue_env = \"A\"\n[[proxy.credentials]]\nhost = \"b.com\"\nheader = \"X\"\nvalue_env = \"B\"\n", 8, "proxy.credentials[1].host", false},
		{"credential on another port is https", "[[proxy.credentials]]\nhost = \"a.com:80\"\nheader = \"X\"\nvalue_env = \"A\"\n[[proxy.credentials]]\nhost = \"a.com:8080\"\nheader = \"X\"\nvalue_env = \"A\"\n", 6, "proxy.credentials[1].host", false},
		{"credential https scheme without mitm", "[[proxy.credentials]]\nhost = \"https://a.com:8443\"\nheader = \"X\"\nvalue_env = \"A\"\n", 2, "proxy.credentials[0].host", false},
		{"credential bad scheme", "[[proxy.credentials]]\nhost = \"ftp://a.com\"\nheader = \"X\"\nvalue_env = \"A\"\n", 2, "proxy.credentials[0].host", false},
		{"loopback allow", "[egress]\nallow = [\"a.com\", \"127.0.0.1:8080\"]\n", 2, "egress.allow", false},
		{"unspecified allow", "[egress]\nallow = [\"0.0.0.0\"]\n", 2, "egress.allow", false},
		{"bad loopback_entries", "[egress]\nloopback_entries = \"allow\"\n", 2, "egress.loopback_entries", false},
		{"git_push pattern", "[proxy]\nmitm = true\ngit_push = [\n  \"agent/*\",\n  \"a..b\",\n]\n", 5, "proxy.git_push", false},
		{"git_push tag pattern", "[proxy]\nmitm = true\ngit_push = [\"refs/tags/\"]\n", 3, "proxy.git_push", false},
		{"credential placeholder for two secrets", "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\nplaceholder_env = \"P\"\n[[proxy.credentials]]\nhost = \"b.com\"\nheader = \"X\"\nvalue_env = \"B\"\nplaceholder_env = \"P\"\n", 12, "proxy.credentials[1].placeholder_env", false},
		{"credential placeholder is a value", "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\n[[proxy.credentials]]\nhost = \"b.com\"\nheader = \"X\"\nvalue_env = \"B\"\nplaceholder_env = \"A\"\n", 11, "proxy.credentials[1].placeholder_env", false},
		{"credential value is a placeholder", "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\nplaceholder_env = \"B\"\n[[proxy.credentials]]\nhost = \"b.com\"\nheader = \"X\"\nvalue_env = \"B\"\n", 11, "proxy.credentials[1].value_env", false},
		{"credential host and header twice", "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"Authorization\"\nvalue_env = \"A\"\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"authorization\"\nvalue_env = \"B\"\n", 9, "proxy.credentials[1].header", false},
		{"credential repeated", "[proxy]\nmitm = true\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\n[[proxy.credentials]]\nhost = \"a.com\"\nheader = \"X\"\nvalue_env = \"A\"\n", 8, "proxy.credentials[1].host", false},
		{"credential 443 without mitm", "[[proxy.credentials]]\nhost = \"[2001:db8::1]:443\"\nheader = \"X\"\nvalue_env = \"A\"\n", 2, "proxy.credentials[0].host", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, environ := testHome(t)
			file := writeFile(t, filepath.Join(home, "c.toml"), tt.doc)
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", what)
				}
				ce := asConfigError(t, err)
				if ce.File != file || ce.Line != tt.line || ce.Key != tt.key || ce.Source != "" {
					t.Errorf("%s: got File %q Line %d Key %q Source %q, want line %d key %q (%v)",
						what, ce.File, ce.Line, ce.Key, ce.Source, tt.line, tt.key, err)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: %v does not match ErrInvalid", what, err)
				}
				if errors.Is(err, ErrNotImplemented) != tt.notImpl {
					t.Errorf("%s: errors.Is(ErrNotImplemented) = %v, want %v", what, !tt.notImpl, tt.notImpl)
				}
			}
			_, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{ConfigFile: file}, Writable: nowhere})
			check("Load", err)
			host, err := HostFromEnviron(environ, 1000, 1000)
			if err != nil {
				t.Fatal(err)
			}
			check("ValidateFile", ValidateFile(file, host))
		})
	}
}

// TestUnknownKeys checks that every unknown key of a file is reported.
func TestUnknownKeys(t *testing.T) {
	home, environ := testHome(t)
	writeUserFile(t, home, "bogus = 1\n[sandbox]\nalso = 2\n")
	_, _, err := Load(LoadOptions{Environ: environ})
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		lines = append(lines, asConfigError(t, e).Line)
	}
	if len(lines) != 2 || lines[0] != 1 || lines[1] != 3 {
		t.Errorf("got lines %v, want [1 3] (%v)", lines, err)
	}
}

// TestErrorMessages shows that messages read as a sentence naming the place.
func TestErrorMessages(t *testing.T) {
	home, environ := testHome(t)
	tests := []struct{ doc, flag, want string }{{
		doc:  "[sandbox]\n\n\nmode = \"bogus\"\n",
		want: `FILE:4: sandbox.mode: "bogus" is not one of enforce, auto, off`,
	}, {
		doc:  "[sandbox]\nreadonly = true\n",
		want: "FILE:2: sandbox.readonly: unknown key; [sandbox] allows mode, environment, read_only, writable_dirs, hide_paths, mask_files, mask_allow, mask_skip, ro_binds, rw_binds, host_mounts, system_binds, tmp, tmp_size, disk_reserve, bind_host_cache, docker_socket, terminal_clipboard, relax_syscalls, early_start",
	}, {
		doc:  "[sandbox]\ntmp = \"tmpfs\"\ntmp_size = \"512k\"\n",
		want: `FILE:3: sandbox.tmp_size: "512k" is less than 1m`,
	}, {
		doc:  "[sandbox]\ntmp_size = \"lots\"\n",
		want: `FILE:2: sandbox.tmp_size: "lots" is not a size such as "512m" or "4g"`,
	}, {
		doc:  "[sandbox]\ndisk_reserve = \"-1g\"\n",
		want: `FILE:2: sandbox.disk_reserve: "-1g" is not a size such as "1g" or "500m" ("0" for no reserve)`,
	}, {
		doc:  "[sandbox]\nread_only = \"yes\"\n",
		want: "FILE:2: sandbox.read_only: expected true or false, not a string",
	}, {
		doc:  "[docker]\nagent_bind = \"yes\"\n",
		want: "FILE:2: docker.agent_bind: expected true or false, not a string",
	}, {
		doc:  "[egress]\nmode = \"vpn\"\n",
		want: `FILE:2: egress.mode: "vpn" is not one of open, none, proxy, allowlist`,
	}, {
		doc:  "[tools.claude]\nkey = \"vault\"\n",
		want: `FILE:2: tools.claude.key: "vault" is not one of env, proxy`,
	}, {
		flag: "bogus",
		want: `flag --mode: "bogus" is not one of enforce, auto, off`,
	}}
	for _, tt := range tests {
		file := writeFile(t, filepath.Join(home, "c.toml"), tt.doc)
		opts := LoadOptions{Environ: environ, Flags: Flags{ConfigFile: file}, Writable: nowhere}
		if tt.flag != "" {
			opts.Flags.Mode = &tt.flag
		}
		_, _, err := Load(opts)
		if want := replaceFile(tt.want, file); err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

func replaceFile(s, file string) string {
	if len(s) > 4 && s[:4] == "FILE" {
		return file + s[4:]
	}
	return s
}

// A key defined twice is named whole, with the line of its first definition.
func TestDuplicateKeyMessage(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), "[sandbox]\nmode = \"enforce\"\n\nmode = \"off\"\n")
	host, err := HostFromEnviron([]string{"HOME=/nonexistent"}, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	err = ValidateFile(file, host)
	want := file + ":4: sandbox.mode: defined again: first at line 2; a key or table may appear once in a file"
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestCredentialsShareAKey: entries for one key sent to several hosts (the same
// value_env and placeholder_env, different hosts) are not a clash.
func TestCredentialsShareAKey(t *testing.T) {
	home, environ := testHome(t)
	file := writeFile(t, filepath.Join(home, "c.toml"), "[proxy]\nmitm = true\n"+
		"[[proxy.credentials]]\nhost = \"api.openai.com\"\nheader = \"Authorization\"\nformat = \"Bearer {}\"\nvalue_env = \"OPENAI_API_KEY\"\nplaceholder_env = \"OPENAI_API_KEY\"\n"+
		"[[proxy.credentials]]\nhost = \"gw.corp.test\"\nheader = \"Authorization\"\nformat = \"Bearer {}\"\nvalue_env = \"OPENAI_API_KEY\"\nplaceholder_env = \"OPENAI_API_KEY\"\n")
	if _, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{ConfigFile: file}, Writable: nowhere}); err != nil {
		t.Fatal(err)
	}
}
