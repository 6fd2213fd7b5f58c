//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
// which kills bwrap beside its setup (the go-ahead refused). The refusal may kill
// the wrapper before it started that process (nothing here can hold the refusal
// back): then the test shows nothing; TestBwrapSignalInSetupLeavesNothing is the
// deterministic one.
func TestBwrapRefusedRunLeavesNothing(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	cfg := p.writeConfig("bwrap", "c.toml", "[sandbox]\ndisk_reserve = \"128m\"\n")
	smallProject(t, p, 64<<20)
	path := wrapBwrap(t, p, "")
	r := run(t, p.dir, []string{path}, "", "--isolator=bwrap", "--config", cfg, "--", "/bin/sh", "-c", "touch ran")
	if r.code != 125 || !strings.Contains(r.stderr, "the command did not run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") {
		t.Errorf("want the run refused (125) naming sandbox.disk_reserve; got %s", r)
	}
	if left := orphanedBwraps(p.root, time.Now().Add(5*time.Second)); len(left) > 0 {
		t.Errorf("devsandbox refused the run and exited, and left running (killed now):\n  %s", strings.Join(left, "\n  "))
	}
}

// A run stopped by two signals while bwrap sets up (the first waits for the command,
// the second tears the half-built sandbox down: a signal to bwrap) leaves no
// process behind either. The wrapper says it started its orphan-to-be through a
// fifo and then waits on another, before it execs the real bwrap: the second
// signal finds it there.
func TestBwrapSignalInSetupLeavesNothing(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	for _, f := range []string{"wrap/started", "wrap/never"} {
		p.mkdir("wrap")
		if err := syscall.Mkfifo(p.path(f), 0o600); err != nil {
			t.Fatal(err)
		}
		p.chownUp(p.path(f))
	}
	path := wrapBwrap(t, p, "echo started >"+p.path("wrap/started")+"; read x <"+p.path("wrap/never")+"\n")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a run the signals do not stop fails, not hangs
	defer cancel()
	cmd := command(ctx, p.dir, baseEnv(path), "--isolator=bwrap", "--", "/bin/sh", "-c", "touch ran")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := os.ReadFile(p.path("wrap/started")); err != nil { // until the wrapper writes and closes it
		t.Fatal(err)
	}
	// Two different signals: a second SIGTERM could merge with the first while
	// that one is still pending.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(stderr.String(), "did not") {
		t.Errorf("want the run stopped before the command ran; exit %d (%v):\n%s", code, err, stderr.String())
	}
	if left := orphanedBwraps(p.root, time.Now().Add(5*time.Second)); len(left) > 0 {
		t.Errorf("devsandbox was stopped in bwrap's setup and exited, and left running (killed now):\n  %s", strings.Join(left, "\n  "))
	}
}

// devsandbox itself killed (SIGKILL) while bwrap sets up leaves no process behind:
// bwrap dies with it (its parent-death signal), but nothing of devsandbox is left
// to kill bwrap's group, where bwrap's child is until its setsid, with no
// parent-death signal of its own until just before its exec. The wrapper stands
// for that child as in TestBwrapSignalInSetupLeavesNothing, and says through a
// fifo that it started it.
func TestBwrapKill9InSetupLeavesNothing(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	for _, f := range []string{"wrap/started", "wrap/never"} {
		p.mkdir("wrap")
		if err := syscall.Mkfifo(p.path(f), 0o600); err != nil {
			t.Fatal(err)
		}
		p.chownUp(p.path(f))
	}
	path := wrapBwrap(t, p, "echo started >"+p.path("wrap/started")+"; read x <"+p.path("wrap/never")+"\n")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := command(ctx, p.dir, baseEnv(path), "--isolator=bwrap", "--", "/bin/sh", "-c", "touch ran")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := os.ReadFile(p.path("wrap/started")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if left := orphanedBwraps(p.root, time.Now().Add(5*time.Second)); len(left) > 0 {
		t.Errorf("devsandbox was killed (SIGKILL) in bwrap's setup and left running (killed now):\n  %s", strings.Join(left, "\n  "))
	}
	if _, err := os.Stat(p.path("ran")); err == nil {
		t.Error("the command ran after devsandbox was killed")
	}
}

// wrapBwrap writes a wrapper named bwrap in p's wrap/ and returns the PATH that
// puts it first. Before it runs script and then execs the real bwrap, it starts a
// process of the kind a bwrap killed in its setup leaves behind (its child, before
// its setsid and its parent-death signal): a bwrap in the run's process group,
// bound to nothing's life, naming the project in its argv.
func wrapBwrap(t *testing.T, p *project, script string) string {
	t.Helper()
	real := "bwrap"
	if it.bwrapDir != "" {
		real = filepath.Join(it.bwrapDir, "bwrap")
	}
	real, err := exec.LookPath(real)
	if err != nil {
		t.Fatal(err)
	}
	// Only the run's bwrap (its init's readiness socket): doctor's trial sandbox
	// after a failed setup runs the real one.
	p.write("wrap/bwrap", "#!/bin/sh\ncase \"$*\" in *--ready-fd=*)\n"+
		real+" --dev-bind / / --chdir \"$PWD\" -- sleep 1000 </dev/null >/dev/null 2>&1 &\n"+
		script+";;\nesac\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(p.path("wrap/bwrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + p.path("wrap") + ":/usr/local/bin:/usr/bin:/bin"
}
