//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceRemovedDuringSetup: a bind source removed on the host after devsandbox
// pinned it and before bubblewrap mounted it stops the launch, and the error names
// the source (bwrap itself only says "/proc/self/fd/N"). A bwrap ahead on PATH removes
// the writable directory, then runs the real one.
func TestSourceRemovedDuringSetup(t *testing.T) {
	requireBwrap(t)
	real := "bwrap"
	if it.bwrapDir != "" {
		real = filepath.Join(it.bwrapDir, "bwrap")
	}
	real, err := exec.LookPath(real)
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	p.mkdir("proj/data")
	data := p.path("proj/data")
	p.write("wrap/bwrap", "#!/bin/sh\nrmdir '"+data+"' || exit 99\nexec '"+real+"' \"$@\"\n")
	if err := os.Chmod(p.path("wrap/bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := p.writeConfig("bwrap", "ro.toml", "[sandbox]\nwritable_dirs = [\"data\"]\n")
	r := run(t, p.dir, []string{"PATH=" + p.path("wrap") + ":/usr/local/bin:/usr/bin:/bin"}, "",
		"--isolator=bwrap", "--egress=open", "--read-only", "--config", cfg, "--", "/bin/sh", "-c", "echo RAN")
	if r.code == 0 || strings.Contains(r.stdout, "RAN") {
		t.Fatalf("the launch went on without its source: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Fatalf("the wrapper did not remove %s (%v): stderr %q", data, err, r.stderr)
	}
	want := data + " was removed or replaced on the host while the sandbox was being set up"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not name the removed source:\n%s\nwant it to contain %q", r.stderr, want)
	}
}
