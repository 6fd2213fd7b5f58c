//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scripts/install.sh (the README's run command) installs every binary `make build`
// makes, the same set `make install` installs, and the installed devsandbox answers
// --version and runs the docker isolator (whose backend is a binary of its own).
func TestInstallScript(t *testing.T) {
	requireRoot(t)
	requireDocker(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): its parent is private to root, and the test user runs the
	// installed binary.
	prefix, err := os.MkdirTemp("", "devsandbox-it-prefix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(prefix) })
	if err := os.Chmod(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts/install.sh"))
	cmd.Env = append(os.Environ(), "PREFIX="+prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("PREFIX=%s scripts/install.sh: %v\n%s", prefix, err, out)
	}
	var built []string
	ents, err := os.ReadDir(filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			built = append(built, e.Name())
		}
	}
	installed, err := os.ReadDir(filepath.Join(prefix, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range installed {
		names = append(names, e.Name())
	}
	want := binaries()
	slices.Sort(want)
	if !slices.Equal(names, want) || !slices.Equal(built, want) {
		t.Fatalf("make build made %v, install.sh installed %v, the Makefile's BINARIES are %v", built, names, want)
	}

	bin := filepath.Join(prefix, "bin", "devsandbox")
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	if r := runBin(t, bin, p.dir, nil, "", "--version"); r.code != 0 || r.stdout != string(out) {
		t.Errorf("installed devsandbox --version:\n%s\nwant %q", r, out)
	}
	r := runBin(t, bin, p.dir, nil, "", "--isolator=docker", "--dry-run", "--", "true")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "docker ") && !strings.Contains(r.stdout, "\ndocker ") {
		t.Errorf("installed devsandbox --isolator=docker --dry-run:\n%s", r)
	}
}
