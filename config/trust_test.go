package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

var trustTime = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

// project makes a project directory under home holding a .devsandbox.toml with
// content, and returns the directory, the file and the host.
func project(t *testing.T, home string, environ []string, content string) (string, string, Host) {
	t.Helper()
	dir := filepath.Join(home, "src", "p")
	file := writeFile(t, filepath.Join(dir, ProjectFileName), content)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return dir, file, host
}

func mustTrust(t *testing.T, host Host, file string) string {
	t.Helper()
	sum, err := Trust(host, file, trustTime)
	if err != nil {
		t.Fatalf("Trust: %v", err)
	}
	return sum
}

// TestTrustStates walks one project file through its life: untrusted, trusted,
// edited, trusted again, untrusted again.
func TestTrustStates(t *testing.T) {
	home, environ := testHome(t)
	dir, file, host := project(t, home, environ, "[docker]\nimage = \"proj:1\"\n")
	untrustedWarning := "ignoring project config " + file + ": it is not trusted; review it, then run `devsandbox config trust` in the project to apply it"
	steps := []struct {
		name     string
		do       func(t *testing.T)
		state    TrustState
		image    string // docker.image after Load; "" when Load fails
		warnings []string
		err      error
	}{{
		name:     "untrusted: ignored with a warning",
		do:       func(*testing.T) {},
		state:    Untrusted,
		image:    "devsandbox/default:dev",
		warnings: []string{untrustedWarning},
	}, {
		name:  "trusted: applied",
		do:    func(t *testing.T) { mustTrust(t, host, file) },
		state: Trusted,
		image: "proj:1",
	}, {
		name:  "edited: the run stops",
		do:    func(t *testing.T) { writeFile(t, file, "[docker]\nimage = \"proj:2\"\n") },
		state: Changed,
		err:   ErrUntrustedChange,
	}, {
		name:  "trusted again: applied",
		do:    func(t *testing.T) { mustTrust(t, host, file) },
		state: Trusted,
		image: "proj:2",
	}, {
		name: "untrusted: ignored again",
		do: func(t *testing.T) {
			if err := Untrust(host, file); err != nil {
				t.Fatal(err)
			}
		},
		state:    Untrusted,
		image:    "devsandbox/default:dev",
		warnings: []string{untrustedWarning},
	}}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			if got, err := CheckTrust(host, file); err != nil || got != st.state {
				t.Errorf("CheckTrust = %v, %v; want %v", got, err, st.state)
			}
			c, warnings, err := Load(LoadOptions{Environ: environ, ProjectDir: dir, UID: 1000, GID: 1000})
			if st.err != nil {
				if !errors.Is(err, st.err) || errors.Is(err, ErrInvalid) {
					t.Fatalf("Load error %v, want %v and not ErrInvalid", err, st.err)
				}
				want := file + ": changed since it was trusted (trusted 2026-03-04T05:06:07Z); review the changes, then run `devsandbox config trust` in the project again"
				if ce := asConfigError(t, err); ce.File != file || err.Error() != want {
					t.Errorf("got  %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(warnings, st.warnings) {
				t.Errorf("warnings = %q, want %q", warnings, st.warnings)
			}
			wantOrigin, wantFiles := "default", []string(nil)
			if st.state == Trusted {
				wantOrigin, wantFiles = file, []string{file}
			}
			if c.Docker.Image != st.image || c.Origins["docker.image"] != wantOrigin || !reflect.DeepEqual(c.Files, wantFiles) {
				t.Errorf("docker.image %q from %q, files %q; want %q from %q, files %q",
					c.Docker.Image, c.Origins["docker.image"], c.Files, st.image, wantOrigin, wantFiles)
			}
		})
	}
}

// TestProjectLayerOrder checks defaults < user file < project file < --config < flags,
// and that --config replaces the user file only.
func TestProjectLayerOrder(t *testing.T) {
	home, environ := testHome(t)
	user := writeUserFile(t, home, "[sandbox]\nmode = \"auto\"\n[docker]\nimage = \"user\"\n[limits]\nmemory = \"1g\"\n")
	dir, file, host := project(t, home, environ, "[sandbox]\nmode = \"enforce\"\n[docker]\nimage = \"proj\"\n[limits]\ncpus = 3\n")
	mustTrust(t, host, file)
	explicit := writeFile(t, filepath.Join(home, "explicit.toml"), "[limits]\ncpus = 4\n")

	c, _ := mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir})
	if c.Sandbox.Mode != "enforce" || c.Docker.Image != "proj" || c.Limits.Memory != "1g" ||
		c.Origins["docker.image"] != file || c.Origins["limits.memory"] != user || !reflect.DeepEqual(c.Files, []string{user, file}) {
		t.Errorf("user + project: mode %q image %q memory %q files %q", c.Sandbox.Mode, c.Docker.Image, c.Limits.Memory, c.Files)
	}

	image := "flag"
	c, _ = mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir, Flags: Flags{ConfigFile: explicit, Image: &image}, Writable: nowhere})
	if c.Limits.CPUs != 4 || c.Limits.Memory != "" || c.Docker.Image != "flag" || c.Origins["limits.cpus"] != explicit ||
		!reflect.DeepEqual(c.Files, []string{file, explicit}) {
		t.Errorf("--config: cpus %v memory %q image %q files %q", c.Limits.CPUs, c.Limits.Memory, c.Docker.Image, c.Files)
	}

	// The project file given as --config applies as that, without the project rules,
	// once trusted: a sandbox can write the project (and create the file if absent).
	if err := Untrust(host, file); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, "[sandbox]\nmode = \"off\"\n")
	if _, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir, Flags: Flags{ConfigFile: file}, Writable: within(dir)}); !errors.Is(err, ErrUntrustedConfigFile) {
		t.Errorf("untrusted project file as --config: got %v, want ErrUntrustedConfigFile", err)
	}
	if _, err := TrustConfigFile(host, file, trustTime); err != nil {
		t.Fatal(err)
	}
	c, warnings := mustLoad(t, LoadOptions{Environ: environ, ProjectDir: dir, Flags: Flags{ConfigFile: file}, Writable: within(dir)})
	if len(warnings) != 0 || c.Sandbox.Mode != "off" || !reflect.DeepEqual(c.Files, []string{file}) {
		t.Errorf("project file as --config: warnings %q, mode %q, files %q", warnings, c.Sandbox.Mode, c.Files)
	}
}

func TestProjectFileValidation(t *testing.T) {
	home, environ := testHome(t)
	dir, file, host := project(t, home, environ, "[sandbox]\n\ntmp = \"disk\"\n")
	if _, err := Trust(host, file, trustTime); err == nil {
		t.Fatal("Trust accepted an invalid file")
	}
	// Trusted while valid, then broken: the change is caught before the content.
	writeFile(t, file, "")
	mustTrust(t, host, file)
	writeFile(t, file, "[sandbox]\n\ntmp = \"disk\"\n")
	if _, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir}); !errors.Is(err, ErrUntrustedChange) {
		t.Errorf("Load = %v, want ErrUntrustedChange", err)
	}
	// Records written by hand (or by an older devsandbox) still get every check.
	if err := updateTrust(host, func(r *trustRecords) {
		r.Files[trustKey(file)] = trustRecord{SHA256: contentHash([]byte("[sandbox]\n\ntmp = \"disk\"\n"))}
	}); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir})
	if ce := asConfigError(t, err); ce.File != file || ce.Line != 3 || ce.Key != "sandbox.tmp" || !errors.Is(err, ErrInvalid) {
		t.Errorf("got %#v (%v)", ce, err)
	}
}

func TestTrustHash(t *testing.T) {
	home, environ := testHome(t)
	const content = "isolator = \"bwrap\"\n"
	const want = "8ef113f03636bf84cd29ec3d1b4ccd553a5f13b049289b42045ea2e57b6330dd" // sha256sum
	_, file, host := project(t, home, environ, content)
	other := writeFile(t, filepath.Join(home, "q", ProjectFileName), content)
	if sum := mustTrust(t, host, file); sum != want {
		t.Errorf("sum = %s, want %s", sum, want)
	}
	if sum, err := Trust(host, other, trustTime.Add(time.Hour)); sum != want || err != nil {
		t.Errorf("same content elsewhere: %s, %v", sum, err)
	}
	if sum := mustTrust(t, host, file); sum != want {
		t.Errorf("trusted again: %s", sum)
	}
	// Only the content counts: not the time, the mode or the file being rewritten.
	if err := os.Chtimes(file, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, content)
	if st, err := CheckTrust(host, file); st != Trusted || err != nil {
		t.Errorf("after touch: %v, %v", st, err)
	}
	for _, edit := range []string{"isolator = \"bwrap\"\r\n", "isolator = \"bwrap\"", "isolator = \"bwrap\"\n\n"} {
		writeFile(t, file, edit)
		if st, err := CheckTrust(host, file); st != Changed || err != nil {
			t.Errorf("content %q: %v, %v", edit, st, err)
		}
	}
}

func TestTrustFile(t *testing.T) {
	home, environ := testHome(t)
	for _, tt := range []struct {
		environ []string
		want    string
	}{
		{environ, filepath.Join(home, ".config/devsandbox/trusted.toml")},
		{append(environ, "XDG_CONFIG_HOME=/xdg"), "/xdg/devsandbox/trusted.toml"},
	} {
		host, err := HostFromEnviron(tt.environ, 1000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got := TrustFile(host); got != tt.want {
			t.Errorf("TrustFile = %q, want %q", got, tt.want)
		}
	}
}

func TestTrustRecordsFile(t *testing.T) {
	home, environ := testHome(t)
	_, file, host := project(t, home, environ, "")
	tf := TrustFile(host)
	sum := mustTrust(t, host, file)

	got, err := os.ReadFile(tf)
	if err != nil {
		t.Fatal(err)
	}
	want := trustHeader + "[files]\n[files.'" + file + "']\nsha256 = '" + sum + "'\ntrusted_at = 2026-03-04T05:06:07Z\n"
	if string(got) != want {
		t.Errorf("trusted.toml:\n%s\nwant:\n%s", got, want)
	}
	for path, mode := range map[string]fs.FileMode{tf: 0o600, filepath.Dir(tf): 0o700 | fs.ModeDir} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode(), err, mode)
		}
	}
}

func TestTrustWriteIsAtomic(t *testing.T) {
	home, environ := testHome(t)
	_, file, host := project(t, home, environ, "")
	other := writeFile(t, filepath.Join(home, "q", ProjectFileName), "")
	tf := TrustFile(host)
	mustTrust(t, host, other)
	if err := os.Chmod(tf, 0o644); err != nil {
		t.Fatal(err)
	}
	before := inode(t, tf)

	mustTrust(t, host, file)
	if inode(t, tf) == before {
		t.Error("trusted.toml was rewritten in place, not replaced")
	}
	if fi, _ := os.Stat(tf); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after replacing a 0644 file", fi.Mode().Perm())
	}
	for _, f := range []string{file, other} {
		if st, err := CheckTrust(host, f); st != Trusted || err != nil {
			t.Errorf("%s: %v, %v", f, st, err)
		}
	}
	assertOnly(t, filepath.Dir(tf), "trusted.toml")

	// A write that fails leaves the target as it was and no temporary file behind.
	blocked := filepath.Join(t.TempDir(), "target")
	writeFile(t, filepath.Join(blocked, "keep"), "x")
	if err := writeAtomic(blocked, []byte("new")); err == nil {
		t.Fatal("renaming over a directory succeeded")
	}
	assertOnly(t, filepath.Dir(blocked), "target")
	assertOnly(t, blocked, "keep")
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

func TestTrustRecordsMustBePrivate(t *testing.T) {
	home, environ := testHome(t)
	dir, file, host := project(t, home, environ, "")
	mustTrust(t, host, file)
	if err := os.Chmod(TrustFile(host), 0o666); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"CheckTrust": func() error { _, err := CheckTrust(host, file); return err }(),
		"Load":       func() error { _, _, err := Load(LoadOptions{Environ: environ, ProjectDir: dir}); return err }(),
		"Trust":      func() error { _, err := Trust(host, file, trustTime); return err }(),
	} {
		if ce := asConfigError(t, err); ce.File != TrustFile(host) {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func TestTrustMissingProjectFile(t *testing.T) {
	home, environ := testHome(t)
	_, _, host := project(t, home, environ, "")
	missing := filepath.Join(home, "nope", ProjectFileName)
	if _, err := CheckTrust(host, missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckTrust: %v", err)
	}
	if _, err := Trust(host, missing, trustTime); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Trust: %v", err)
	}
	if err := Untrust(host, missing); err != nil {
		t.Errorf("Untrust of an unknown file: %v", err)
	}
}

// TestTrustThroughSymlink checks that a project reached through a symlinked directory
// is the same project.
func TestTrustThroughSymlink(t *testing.T) {
	home, environ := testHome(t)
	dir, file, host := project(t, home, environ, "")
	link := filepath.Join(home, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	mustTrust(t, host, filepath.Join(link, ProjectFileName))
	if st, err := CheckTrust(host, file); st != Trusted || err != nil {
		t.Errorf("CheckTrust = %v, %v", st, err)
	}
}

// Trust refuses a project file a run would refuse over today's user config, with the
// run's own message, and records nothing; a file a run applies it trusts.
func TestTrustRefusesWhatARunRefuses(t *testing.T) {
	cases := []struct {
		name, user, proj string
		key              string // "" when the file is to be trusted
	}{
		{"sandbox.mode below the default", "", "[sandbox]\nmode = \"off\"\n", "sandbox.mode"},
		{"egress.mode below the user's", "[egress]\nmode = \"none\"\n", "[egress]\nmode = \"proxy\"\n", "egress.mode"},
		{"a push pattern added to the user's", "[proxy]\nmitm = true\ngit_push = [\"agent/*\"]\n", "[proxy]\ngit_push = [\"main\"]\n", "proxy.git_push"},
		{"a push policy without MITM", "", "[proxy]\ngit_push = [\"agent/*\"]\n", "proxy.git_push"},
		{"a user-only key", "", "[egress]\nallow = [\"example.com\"]\n", "egress.allow"},
		{"stricter than the user's", "[sandbox]\nmode = \"auto\"\n", "[sandbox]\nmode = \"enforce\"\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, environ := testHome(t)
			if tc.user != "" {
				writeUserFile(t, home, tc.user)
			}
			dir, file, host := project(t, home, environ, tc.proj)
			_, err := Trust(host, file, trustTime)
			if tc.key == "" {
				if err != nil {
					t.Fatalf("Trust: %v", err)
				}
				mustLoad(t, LoadOptions{ProjectDir: dir, Environ: environ})
				return
			}
			if ce := asConfigError(t, err); ce.File != file || ce.Key != tc.key || ce.Line == 0 || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Trust: %v (file %q, key %q, line %d), want %s in %s", err, ce.File, ce.Key, ce.Line, tc.key, file)
			}
			if st, _ := CheckTrust(host, file); st != Untrusted {
				t.Fatalf("a refused file is %v", st)
			}
			// The run's message: record the file as trusted behind Trust's back.
			if err := updateTrust(host, func(r *trustRecords) {
				doc, _ := os.ReadFile(file)
				r.Files[trustKey(file)] = trustRecord{SHA256: contentHash(doc), TrustedAt: trustTime}
			}); err != nil {
				t.Fatal(err)
			}
			_, _, runErr := Load(LoadOptions{ProjectDir: dir, Environ: environ, UID: 1000, GID: 1000})
			if runErr == nil || runErr.Error() != err.Error() {
				t.Errorf("Trust says\n%v\na run says\n%v", err, runErr)
			}
		})
	}
}

// TestEnclosingProjectFile: a project nested in one whose file the user trusted (a
// sandbox can make the nested .git) runs only with a trusted file of its own; an
// enclosing file that is untrusted, or a directory without a .git, drops nothing.
func TestEnclosingProjectFile(t *testing.T) {
	home, environ := testHome(t)
	outer, file, host := project(t, home, environ, "[sandbox]\nmask_files = [\"*.secret\"]\n")
	inner := filepath.Join(outer, "sub")
	if err := os.MkdirAll(filepath.Join(inner, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	load := func() error {
		_, _, err := Load(LoadOptions{ProjectDir: inner, Environ: environ, UID: 1000, GID: 1000})
		return err
	}
	if err := load(); err != nil {
		t.Errorf("an untrusted enclosing file: %v", err)
	}
	mustTrust(t, host, file)
	if err := load(); err != nil {
		t.Errorf("an enclosing directory without a .git (no project): %v", err)
	}
	if err := os.Mkdir(filepath.Join(outer, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := inner + " holds a .git, so it is a project of its own, inside the project " + outer + " whose trusted " + file + " would not apply here"
	if err := load(); !errors.Is(err, ErrEnclosingProject) || !strings.Contains(err.Error(), want) {
		t.Errorf("no project file of its own: err = %v, want %q", err, want)
	}
	own := writeFile(t, filepath.Join(inner, ProjectFileName), "[sandbox]\nmask_files = [\"*.secret\"]\n")
	if err := load(); !errors.Is(err, ErrEnclosingProject) {
		t.Errorf("an untrusted file of its own: err = %v, want ErrEnclosingProject", err)
	}
	mustTrust(t, host, own)
	if err := load(); err != nil {
		t.Errorf("a trusted file of its own: %v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	// A trusted file that is gone stops the load as a changed one does, until forgotten.
	wantGone := own + ": trusted (trusted 2026-03-04T05:06:07Z) and is gone"
	if err := load(); !errors.Is(err, ErrUntrustedChange) || !strings.HasPrefix(err.Error(), wantGone) {
		t.Errorf("its own trusted file removed: err = %v, want %q…", err, wantGone)
	}
	if ok, at, err := ForgetGone(host, own); !ok || err != nil || !at.Equal(trustTime.Truncate(time.Second)) {
		t.Errorf("ForgetGone = %v, %v, %v", ok, at, err)
	}
	if ok, _, err := ForgetGone(host, own); ok || err != nil {
		t.Errorf("ForgetGone again = %v, %v; want nothing to forget", ok, err)
	}
	if ok, _, err := ForgetGone(host, inner); ok || err == nil {
		t.Errorf("ForgetGone of a path that exists = %v, %v; want an error", ok, err)
	}
	// The enclosing file is gone too: its record stops a load from the enclosing
	// project alone, and a nested project has nothing left to drop.
	if err := load(); err != nil {
		t.Errorf("the enclosing file removed (nothing to drop): %v", err)
	}
}
