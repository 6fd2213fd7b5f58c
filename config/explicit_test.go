package config

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A --config file a sandbox can write (in the project, or in devsandbox's data and
// state, which hold the sandbox homes and session /tmp) applies only while trusted;
// one elsewhere, or reached through a pipe, applies as before.
func TestExplicitFileWhereSandboxWrites(t *testing.T) {
	home, environ := testHome(t)
	dir, _, host := project(t, home, environ, "")
	if err := os.Remove(filepath.Join(dir, ProjectFileName)); err != nil {
		t.Fatal(err)
	}
	const content = "[docker]\nimage = \"mine:1\"\n"
	load := func(file string) (*Config, error) {
		c, _, err := Load(LoadOptions{Environ: environ, UID: 1000, GID: 1000, ProjectDir: dir, Flags: Flags{ConfigFile: file}})
		return c, err
	}
	inProject := writeFile(t, filepath.Join(dir, "sub", "dev.toml"), content)
	inHome := writeFile(t, filepath.Join(home, ".local", "share", "devsandbox", "p-1234", "home", "dev.toml"), content)
	link := filepath.Join(home, "link.toml") // outside, naming a file inside
	if err := os.Symlink(inProject, link); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{inProject, inHome, link} {
		if _, err := load(f); !errors.Is(err, ErrUntrustedConfigFile) {
			t.Errorf("%s untrusted: got %v, want ErrUntrustedConfigFile", f, err)
		}
	}
	for _, f := range []string{inProject, inHome} {
		if _, err := TrustConfigFile(host, f, dir, trustTime); err != nil {
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
	// Elsewhere, no trust is needed; TrustConfigFile says so.
	outside := writeFile(t, filepath.Join(home, "cfg", "dev.toml"), content)
	if c, err := load(outside); err != nil || c.Docker.Image != "mine:1" {
		t.Errorf("outside: %v", err)
	}
	if _, err := TrustConfigFile(host, outside, dir, trustTime); !errors.Is(err, ErrInvalid) {
		t.Errorf("TrustConfigFile outside: got %v, want ErrInvalid", err)
	}
}

// The key a file is trusted under, and where a pipe lies: nowhere.
func TestSandboxWritable(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	file := writeFile(t, filepath.Join(proj, "a.toml"), "")
	roots := []string{proj}
	if key, ok := sandboxWritable(file, roots); !ok || key != file {
		t.Errorf("in the project: %q, %v", key, ok)
	}
	if _, ok := sandboxWritable(filepath.Join(root, "projx", "a.toml"), roots); ok {
		t.Error("a sibling sharing the prefix counted as in the project")
	}
	if _, ok := sandboxWritable("/dev/stdin", roots); ok {
		t.Error("/dev/stdin counted as in the project")
	}
}
