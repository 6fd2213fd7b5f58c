package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// within is a WritableCheck for tests: what lies in one of roots.
func within(roots ...string) func(*Config) WritableCheck {
	return func(*Config) WritableCheck {
		return func(p string) (string, bool) {
			for _, r := range roots {
				if p == r || strings.HasPrefix(p, r+"/") {
					return "it lies in " + r, true
				}
			}
			return "", false
		}
	}
}

// nowhere is a WritableCheck for tests of a --config file no sandbox can write.
var nowhere = within()

// A --config file a sandbox can write (Writable holds it: here the project, or
// devsandbox's data, which holds the sandbox homes) applies only while trusted; one
// elsewhere, or reached through a pipe, applies as before. A file trusted once is held
// to its record wherever it lies.
func TestExplicitFileWhereSandboxWrites(t *testing.T) {
	home, environ := testHome(t)
	dir, _, host := project(t, home, environ, "")
	if err := os.Remove(filepath.Join(dir, ProjectFileName)); err != nil {
		t.Fatal(err)
	}
	const content = "[docker]\nimage = \"mine:1\"\n"
	writable := within(dir, filepath.Join(home, ".local", "share", "devsandbox"))
	load := func(file string) (*Config, error) {
		c, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, ProjectDir: dir, Flags: Flags{ConfigFile: file}, Writable: writable})
		return c, err
	}
	inProject := writeFile(t, filepath.Join(dir, "sub", "dev.toml"), content)
	inHome := writeFile(t, filepath.Join(home, ".local", "share", "devsandbox", "p-1234", "home", "dev.toml"), content)
	link := filepath.Join(home, "link.toml") // outside, naming a file inside
	if err := os.Symlink(inProject, link); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{inProject, inHome, link} {
		_, err := load(f)
		if !errors.Is(err, ErrUntrustedConfigFile) {
			t.Errorf("%s untrusted: got %v, want ErrUntrustedConfigFile", f, err)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.File != f || !strings.Contains(err.Error(), "devsandbox config trust "+f) {
			t.Errorf("%s untrusted: the error names neither the file nor the fix: %v", f, err)
		}
	}
	for _, f := range []string{inProject, inHome} {
		if _, err := TrustConfigFile(host, f, trustTime); err != nil {
			t.Fatalf("TrustConfigFile %s: %v", f, err)
		}
		if c, err := load(f); err != nil || c.Docker.Image != "mine:1" {
			t.Errorf("%s trusted: %v", f, err)
		}
	}
	if c, err := load(link); err != nil || c.Docker.Image != "mine:1" {
		t.Errorf("the link to the trusted file: %v", err)
	}
	writeFile(t, inProject, content+"[sandbox]\nrw_binds = [\"/\"]\n")
	if _, err := load(inProject); !errors.Is(err, ErrUntrustedChange) {
		t.Errorf("changed since trusted: got %v, want ErrUntrustedChange", err)
	}
	// A FIFO left under the name does not hang the load.
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load(fifo); err == nil {
		t.Error("a FIFO in the project: loaded")
	}
	// Elsewhere, no trust is needed.
	outside := writeFile(t, filepath.Join(home, "cfg", "dev.toml"), content)
	if c, err := load(outside); err != nil || c.Docker.Image != "mine:1" {
		t.Errorf("outside: %v", err)
	}
	// Once trusted, it is held to its record there too: the sandbox that could write
	// it may have dropped what made it writable.
	if _, err := TrustConfigFile(host, outside, trustTime); err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, content+"# changed\n")
	if _, err := load(outside); !errors.Is(err, ErrUntrustedChange) {
		t.Errorf("a trusted file outside, changed: got %v, want ErrUntrustedChange", err)
	}
	// Without a Writable, every file on disk needs trust.
	other := writeFile(t, filepath.Join(home, "cfg", "other.toml"), content)
	if _, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, ProjectDir: dir, Flags: Flags{ConfigFile: other}}); !errors.Is(err, ErrUntrustedConfigFile) {
		t.Errorf("no Writable: got %v, want ErrUntrustedConfigFile", err)
	}
}

// A hard-linked --config file needs trust wherever it lies: another of its names may
// be in the project, and nothing but the count tells. Trusted, it applies; one name
// fewer, it is judged by its path again.
func TestExplicitFileHardLinked(t *testing.T) {
	home, environ := testHome(t)
	const content = "[docker]\nimage = \"mine:1\"\n"
	file := writeFile(t, filepath.Join(home, "cfg", "dev.toml"), content)
	second := filepath.Join(home, "elsewhere.toml")
	if err := os.Link(file, second); err != nil {
		t.Fatal(err)
	}
	_, _, host := project(t, home, environ, "")
	load := func() error {
		_, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, Flags: Flags{ConfigFile: file}, Writable: within(filepath.Join(home, "proj"))})
		return err
	}
	err := load()
	want := file + ": not trusted: it is hard-linked (2 names), and another of its names may lie where a sandbox can write it, so it applies only once trusted; review it, then run `devsandbox config trust " + file + "`"
	if !errors.Is(err, ErrUntrustedConfigFile) || err.Error() != want {
		t.Errorf("hard-linked, untrusted:\n%v\nwant\n%s", err, want)
	}
	if _, err := TrustConfigFile(host, file, trustTime); err != nil {
		t.Fatal(err)
	}
	if err := load(); err != nil {
		t.Errorf("hard-linked, trusted: %v", err)
	}
	if err := os.Remove(second); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(TrustFile(host)); err != nil {
		t.Fatal(err)
	}
	if err := load(); err != nil {
		t.Errorf("one name, outside what a sandbox writes: %v", err)
	}
}

// Writable is asked once the configuration is fully loaded: the binds of the file
// itself and of the flags (--mount) are in.
func TestExplicitWritableSeesLoadedConfig(t *testing.T) {
	home, environ := testHome(t)
	shared := filepath.Join(home, "shared")
	file := writeFile(t, filepath.Join(shared, "dev.toml"), "[sandbox]\nrw_binds = [\""+shared+"\"]\n")
	flagged := writeFile(t, filepath.Join(home, "flagged", "dev.toml"), "")
	rwBound := func(c *Config) WritableCheck {
		var roots []string
		roots = append(roots, c.Sandbox.RWBinds...)
		for _, m := range c.Sandbox.HostMounts {
			if !m.ReadOnly {
				roots = append(roots, m.Source)
			}
		}
		return within(roots...)(c)
	}
	for _, f := range []Flags{{ConfigFile: file}, {ConfigFile: flagged, Mounts: []string{filepath.Dir(flagged)}}} {
		if _, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, Flags: f, Writable: rwBound}); !errors.Is(err, ErrUntrustedConfigFile) {
			t.Errorf("%+v: got %v, want ErrUntrustedConfigFile", f, err)
		}
	}
	if _, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, Flags: Flags{ConfigFile: flagged}, Writable: rwBound}); err != nil {
		t.Errorf("not bound: %v", err)
	}
}

// A pipe lies nowhere; a file on disk is somewhere, its links resolved.
func TestRealPath(t *testing.T) {
	root := t.TempDir()
	file := writeFile(t, filepath.Join(root, "proj", "a.toml"), "")
	if err := os.Symlink(file, filepath.Join(root, "l.toml")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(file)
	if got, ok := realPath(filepath.Join(root, "l.toml")); !ok || got != real {
		t.Errorf("the link: %q, %v", got, ok)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, ok := realPath(fmt.Sprintf("/proc/self/fd/%d", r.Fd())); ok {
		t.Error("a pipe counted as a file on disk")
	}
}
