//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run that devsandbox ends while bwrap sets up the sandbox leaves no process
// behind. bwrap's child stays in bwrap's process group until its setsid and has
// no parent-death signal until just before it execs: a bwrap killed before it
// let its child go on used to leave the child waiting for ever. The window is
// microseconds wide; here a wrapper named bwrap starts, before it execs the real
// one, a process of the same kind: a bwrap in the run's process group, bound to
// nothing's life, naming the project. The disk reserve then refuses the run,
// which kills bwrap beside its setup (the go-ahead refused).
func TestBwrapRefusedRunLeavesNothing(t *testing.T) {
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
	cfg := p.writeConfig("bwrap", "c.toml", "[sandbox]\ndisk_reserve = \"128m\"\n")
	smallProject(t, p, 64<<20)
	p.write("wrap/bwrap", "#!/bin/sh\n"+
		real+" --dev-bind / / --chdir \"$PWD\" -- sleep 1000 </dev/null >/dev/null 2>&1 &\n"+
		"exec "+real+" \"$@\"\n")
	if err := os.Chmod(p.path("wrap/bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, p.dir, []string{"PATH=" + p.path("wrap") + ":/usr/local/bin:/usr/bin:/bin"}, "",
		"--isolator=bwrap", "--config", cfg, "--", "/bin/sh", "-c", "touch ran")
	if r.code != 125 || !strings.Contains(r.stderr, "the command did not run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") {
		t.Errorf("want the run refused (125) naming sandbox.disk_reserve; got %s", r)
	}
	if left := orphanedBwraps(p.root, time.Now().Add(5*time.Second)); len(left) > 0 {
		t.Errorf("devsandbox refused the run and exited, and left running (killed now):\n  %s", strings.Join(left, "\n  "))
	}
}
