//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRuntimeSocketDirHousekeeping: with XDG_RUNTIME_DIR set (here a private directory
// of the test's own, so no other suite's directories are touched), a project's socket
// directory is $XDG_RUNTIME_DIR/devsandbox/<id>, one per project ever run.
// `sandboxes rm NAME` removes the project's; `sandboxes prune` removes the orphans
// (no project state has the ID, the user's, nobody holding them, over a minute old)
// and --dry-run lists them. Neither follows a link planted in
// $XDG_RUNTIME_DIR/devsandbox toward a host directory (its target and the link stay),
// nor removes another user's entry, nor one a session holds.
func TestRuntimeSocketDirHousekeeping(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	scratch := newProject(t)
	state, runtime := scratch.path("st"), scratch.path("rt")
	scratch.mkdir("st")
	scratch.mkdir("rt")
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + state, "XDG_RUNTIME_DIR=" + runtime, "DOCKER_HOST=unix://" + scratch.path("no-engine.sock")}
	noPodman := scratch.noPodmanConfig()
	parent := filepath.Join(runtime, "devsandbox")
	old := time.Now().Add(-10 * time.Minute)
	id := func(p *project) string { n := p.name(); return n[strings.LastIndexByte(n, '-')+1:] }

	// socketDirOf runs the project with a published port (which binds a socket in the
	// socket directory) and returns that directory.
	socketDirOf := func(p *project) string {
		t.Helper()
		r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=open", "--publish", fmt.Sprintf("%d:8000", freePort(t)), "--", "true")
		if r.code != 0 {
			t.Fatalf("run of %s:\n%s", p.name(), r)
		}
		d := filepath.Join(parent, id(p))
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			t.Fatalf("no socket directory %s after a run: %v", d, err)
		}
		if err := os.Chtimes(d, old, old); err != nil { // as a directory last used a while ago
			t.Fatal(err)
		}
		return d
	}
	plant := func(name string, uid int) string {
		t.Helper()
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "publish-x"), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(d, "publish-x"), d} {
			if err := os.Lchown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The target of the planted links: a host directory of the user's with a file.
	victim := newLinkTarget(t, scratch)
	link := func(at string) {
		t.Helper()
		victim.plant(at, it.uid)
	}
	exists, victimIntact := lexists, victim.intact
	hold := func(d string) func() {
		t.Helper()
		return holdShared(t, d)
	}

	// rm: the project's own is removed.
	own := newProject(t)
	ownDir := socketDirOf(own)
	if r := run(t, own.dir, env, "", "sandboxes", "rm", own.name()); r.code != 0 {
		t.Fatalf("sandboxes rm:\n%s", r)
	}
	if exists(ownDir) {
		t.Errorf("sandboxes rm left the project's socket directory %s", ownDir)
	}

	// rm: a link planted at the project's name toward a host directory is neither
	// followed nor removed.
	linked := newProject(t)
	linkedDir := socketDirOf(linked)
	if err := os.RemoveAll(linkedDir); err != nil {
		t.Fatal(err)
	}
	link(linkedDir)
	if r := run(t, linked.dir, env, "", "sandboxes", "rm", linked.name()); r.code != 0 {
		t.Fatalf("sandboxes rm with a link at the socket directory's name:\n%s", r)
	}
	victimIntact("sandboxes rm")
	if fi, err := os.Lstat(linkedDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("sandboxes rm removed the link %s: %v", linkedDir, err)
	}
	if err := os.Remove(linkedDir); err != nil {
		t.Fatal(err)
	}

	// rm: a directory a session holds stays (and rm says so).
	held := newProject(t)
	heldDir := socketDirOf(held)
	release := hold(heldDir)
	r := run(t, held.dir, env, "", "sandboxes", "rm", held.name())
	release()
	if !exists(heldDir) || !strings.Contains(r.stderr, heldDir) {
		t.Errorf("sandboxes rm with the socket directory held: exists %v\n%s", exists(heldDir), r)
	}

	// prune: what it removes and what it keeps.
	kept := newProject(t)
	keptDir := socketDirOf(kept) // its project's state is there: not an orphan
	orphan := plant("0ff1ce01", it.uid)
	link(filepath.Join(orphan, "publish-x", "evil.sock")) // what a sandbox could leave
	const nobody = 65534
	foreign := plant("f0e1f001", nobody)
	inUse := plant("1a05e001", it.uid)
	young := plant("a0a9e001", it.uid)
	if err := os.Chtimes(young, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(parent, "11a4ed01")
	link(planted)
	release = hold(inUse)
	defer release()
	stays := []string{keptDir, foreign, inUse, young, planted}
	dry := run(t, scratch.root, env, "", "--config", noPodman, "sandboxes", "prune", "--dry-run")
	// heldDir's project is gone now: its directory, no longer held, is an orphan too.
	orphans := []string{orphan, heldDir}
	for _, d := range orphans {
		if !strings.Contains(dry.stdout, "would remove "+d+":") || !exists(d) {
			t.Errorf("prune --dry-run does not name the orphan %s (or removed it):\n%s", d, dry)
		}
	}
	for _, d := range stays {
		if strings.Contains(dry.stdout, d) {
			t.Errorf("prune --dry-run would remove %s:\n%s", d, dry)
		}
	}
	r = run(t, scratch.root, env, "", "--config", noPodman, "sandboxes", "prune")
	for _, d := range orphans {
		if exists(d) || !strings.Contains(r.stdout, "removed "+d+":") {
			t.Errorf("prune left the orphan %s (or did not say so):\n%s", d, r)
		}
	}
	for _, d := range stays {
		if !exists(d) {
			t.Errorf("prune removed %s:\n%s", d, r)
		}
	}
	victimIntact("sandboxes prune")
	left, _ := filepath.Glob(filepath.Join(parent, "*"))
	t.Logf("left in %s: %q", parent, left)
}
