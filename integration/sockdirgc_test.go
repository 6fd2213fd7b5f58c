//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSocketDirHousekeeping: with a state path too long for socket paths, a project's
// socket directory is a devsandbox-<uid>-XXXXXXXX in the temporary directory (here a
// TMPDIR of the test's own, so no other suite's directories are touched).
// `sandboxes rm NAME` removes the project's own; `sandboxes prune` removes the orphans
// (no project state records them, the user's, nobody holding them, over a minute
// old) and --dry-run lists them. Neither follows a link another user planted at a
// directory's name (its target and the link stay), nor removes a directory of another
// user's, nor one a session holds (the lock every session takes for its life).
func TestSocketDirHousekeeping(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	scratch := newProject(t)
	state := scratch.path("state-" + strings.Repeat("s", 80))
	scratch.mkdir(filepath.Base(state))
	tmp := scratch.path("t")
	scratch.mkdir("t")
	env := []string{"XDG_STATE_HOME=" + state, "TMPDIR=" + tmp, "DOCKER_HOST=unix://" + scratch.path("no-engine.sock")}
	noPodman := scratch.noPodmanConfig()
	prefix := fmt.Sprintf("devsandbox-%d-", it.uid)
	old := time.Now().Add(-10 * time.Minute)

	// socketDirOf runs the project with a published port (which binds a socket in the
	// socket directory) and returns the directory its state records.
	socketDirOf := func(p *project) string {
		t.Helper()
		r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=open", "--publish", fmt.Sprintf("%d:8000", freePort(t)), "--", "true")
		if r.code != 0 {
			t.Fatalf("run of %s:\n%s", p.name(), r)
		}
		b, err := os.ReadFile(filepath.Join(state, "devsandbox", p.name(), "sock-dir"))
		if err != nil {
			t.Fatalf("the socket directory's record: %v", err)
		}
		d := strings.TrimSpace(string(b))
		if filepath.Dir(d) != tmp || !strings.HasPrefix(filepath.Base(d), prefix) {
			t.Fatalf("the socket directory is %s, want a %s* in %s", d, prefix, tmp)
		}
		if err := os.Chtimes(d, old, old); err != nil { // as a directory last used a while ago
			t.Fatal(err)
		}
		return d
	}
	// plant makes a directory at name in tmp owned by uid, over a minute old, with a file.
	plant := func(name string, uid int) string {
		t.Helper()
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(d, "keep"), d} {
			if err := os.Lchown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The target of the planted links: a directory of the user's with a file.
	victim := newLinkTarget(t, scratch)
	const nobody = 65534
	link := func(at string) {
		t.Helper()
		victim.plant(at, nobody)
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

	// rm: the directory the state records was removed (a tmp cleaner) and another user
	// planted a link to the user's directory at its name.
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
		t.Errorf("sandboxes rm removed the other user's link %s: %v", linkedDir, err)
	}

	// rm: a directory a session holds stays (and rm says so).
	held := newProject(t)
	heldDir := socketDirOf(held)
	release := hold(heldDir)
	r := run(t, held.dir, env, "", "sandboxes", "rm", held.name())
	release()
	if exists(heldDir) == false || !strings.Contains(r.stderr, heldDir) {
		t.Errorf("sandboxes rm with the socket directory held: exists %v\n%s", exists(heldDir), r)
	}

	// prune: what it removes and what it keeps.
	kept := newProject(t)
	keptDir := socketDirOf(kept) // recorded by a project's state: not an orphan
	orphan := plant(prefix+"orphan01", it.uid)
	foreign := plant(prefix+"foreign1", nobody)
	inUse := plant(prefix+"inuse001", it.uid)
	young := plant(prefix+"young001", it.uid)
	if err := os.Chtimes(young, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(tmp, prefix+"linked01")
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
	if b, err := os.ReadFile(filepath.Join(foreign, "keep")); err != nil || string(b) != "x" {
		t.Errorf("prune emptied the other user's directory: %q, %v", b, err)
	}
	victimIntact("sandboxes prune")
	left, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"))
	slices.Sort(left)
	t.Logf("left in the temporary directory: %q", left)
}
