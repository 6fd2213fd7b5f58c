//go:build integration

package integration

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKrunAnchorsHousekeeping: krun's anchors directories
// ($XDG_RUNTIME_DIR/devsandbox/anchors-*, where a session stages the binds a sandbox
// could swap) are held by their session and removed by `sandboxes prune` only when
// nobody holds them. A running krun session (runtime runc) holds its own: an
// exclusive flock on it is refused. `sandboxes prune` (and --dry-run) then, in a
// runtime directory of the test's own (the live session's directory moved there, so
// no other session of this machine's is touched), removes one a killed session left
// (over a minute old, nobody holds it) and keeps the live session's, a young one,
// another user's, and a link planted at an anchors name toward a host directory,
// neither followed nor removed. Without XDG_RUNTIME_DIR, prune looks where krun
// stages them then, /run/user/UID (a dry run). The session then ends normally.
func TestKrunAnchorsHousekeeping(t *testing.T) {
	requireRoot(t)
	requirePodman(t)
	p := newProject(t)
	shared := filepath.Join(runtimeDir(), "devsandbox")
	anchors := func() []string {
		ds, _ := filepath.Glob(filepath.Join(shared, "anchors-*"))
		return ds
	}
	// locked reports whether a session holds d (an exclusive flock is refused).
	locked := func(d string) bool {
		f, err := os.Open(d)
		if err != nil {
			return false
		}
		defer f.Close()
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	before := anchors()
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", `echo ready; read _; echo done`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	lines := startLines(t, cmd)
	lines.waitFor("ready")
	// Other suites' sessions may stage theirs meanwhile; only this build's hold them.
	var live, made []string
	for _, d := range anchors() {
		if slices.Contains(before, d) {
			continue
		}
		made = append(made, d)
		if locked(d) {
			live = append(live, d)
		}
	}
	if len(live) != 1 {
		stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("want the running session's one anchors directory, held: have %q (made since the session started: %q)", live, made)
	}

	// A runtime directory of the test's own, on the same file system.
	rt, err := os.MkdirTemp(runtimeDir(), "dsb-it-anchors-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	parent := filepath.Join(rt, "devsandbox")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{rt, parent} {
		if err := os.Chown(d, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-10 * time.Minute)
	held := filepath.Join(parent, filepath.Base(live[0]))
	if err := os.Rename(live[0], held); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(held, old, old); err != nil {
		t.Fatal(err)
	}
	plant := func(name string, uid int, when time.Time) string {
		t.Helper()
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "0"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "1"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{filepath.Join(d, "0"), filepath.Join(d, "1"), d} {
			if err := os.Lchown(q, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	left := plant("anchors-1000000001", it.uid, old)
	young := plant("anchors-1000000002", it.uid, time.Now())
	foreign := plant("anchors-1000000003", 65534, old)
	victim := newLinkTarget(t, p)
	planted := filepath.Join(parent, "anchors-1000000004")
	victim.plant(planted, it.uid)
	victim.plant(filepath.Join(left, "2"), it.uid) // what a sandbox could not leave, followed by nothing
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}

	p.mkdir("state")
	common := []string{"XDG_STATE_HOME=" + p.path("state"), "DOCKER_HOST=unix://" + p.path("no-engine.sock")}
	env := append([]string{"XDG_RUNTIME_DIR=" + rt}, common...)
	noPodman := p.noPodmanConfig()
	stays := []string{held, young, foreign, planted}
	dry := run(t, p.root, env, "", "--config", noPodman, "sandboxes", "prune", "--dry-run")
	if !strings.Contains(dry.stdout, "would remove "+left+": krun's anchors directory") || !lexists(left) {
		t.Errorf("prune --dry-run does not name the left anchors directory %s (or removed it):\n%s", left, dry)
	}
	r := run(t, p.root, env, "", "--config", noPodman, "sandboxes", "prune")
	if lexists(left) || !strings.Contains(r.stdout, "removed "+left+": krun's anchors directory") {
		t.Errorf("prune left the anchors directory %s (or did not say so):\n%s", left, r)
	}
	for _, d := range stays {
		if strings.Contains(dry.stdout, d) || strings.Contains(r.stdout, d) || !lexists(d) {
			t.Errorf("prune removed (or would) %s:\ndry run: %s\nprune: %s", d, dry, r)
		}
	}
	victim.intact("sandboxes prune")
	if fi, err := os.Lstat(planted); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link planted at an anchors name is no longer a link: %v", err)
	}

	// Without XDG_RUNTIME_DIR krun stages in /run/user/UID/devsandbox, podman's
	// choice, and prune looks there (a dry run: other sessions' are there too).
	fallback := filepath.Join(shared, "anchors-it-"+randHex(4))
	if err := os.Mkdir(fallback, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(fallback) })
	if err := os.Chown(fallback, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fallback, old, old); err != nil {
		t.Fatal(err)
	}
	r = run(t, p.root, common, "", "--config", noPodman, "sandboxes", "prune", "--dry-run")
	if !strings.Contains(r.stdout, "would remove "+fallback+": krun's anchors directory") {
		t.Errorf("prune --dry-run without XDG_RUNTIME_DIR does not name %s:\n%s", fallback, r)
	}

	// The session, whose container started before its directory moved, ends normally.
	if _, err := stdin.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	lines.waitFor("done")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the session whose anchors directory prune left: %v", err)
	}
}
