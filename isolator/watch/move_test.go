package watch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// moveAside acts in the project only: a path outside is refused, and a directory on
// the way swapped for a symlink after the check is what gets moved aside (the link,
// which the host's git would follow), never what it points to.
func TestMoveAsideRefusesLinks(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(filepath.Dir(f.proj), "other")
	if err := os.MkdirAll(filepath.Join(outside, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, ".git/config"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func() {
		t.Helper()
		if b, err := os.ReadFile(filepath.Join(outside, ".git/config")); err != nil || string(b) != "host\n" {
			t.Fatalf("the file outside the project is %q (%v), want it untouched", b, err)
		}
	}
	w := &Watcher{p: f.p}
	for _, p := range []string{filepath.Join(f.proj, "../other/.git/config"), filepath.Join(outside, ".git/config")} {
		if _, err := w.moveAside(p, []byte("planted\n")); !errors.Is(err, errOutside) {
			t.Errorf("moveAside(%s) = %v, want errOutside", p, err)
		}
		untouched()
	}

	f.write("sub.real/.git/config", "sandbox\n")
	if err := os.Symlink("../other", f.path("sub")); err != nil {
		t.Fatal(err)
	}
	m, err := w.moveAside(f.path("sub/.git/config"), []byte("planted\n"))
	dest, via, restored := m.dest, m.via, m.restored
	if err != nil || via != f.path("sub") || restored {
		t.Fatalf("moveAside through a link = %q, %q, %v, %v; want the link %s moved", dest, via, restored, err, f.path("sub"))
	}
	untouched()
	if l, err := os.Readlink(dest); err != nil || l != "../other" {
		t.Errorf("quarantined %s is not the link (%q, %v)", dest, l, err)
	}
	if _, err := os.Lstat(f.path("sub")); !os.IsNotExist(err) {
		t.Errorf("the link is still in the project (%v)", err)
	}
}

// moveAside moves what lies in the project, and puts back the version given.
func TestMoveAsideInProject(t *testing.T) {
	f := newFixture(t)
	f.write("sub/.git/config", "sandbox\n")
	w := &Watcher{p: f.p}
	m, err := w.moveAside(f.path("sub/.git/config"), []byte("before\n"))
	dest := m.dest
	if err != nil || !m.restored || len(m.extra) > 0 {
		t.Fatalf("moveAside: %v (%+v)", err, m)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "sandbox\n" {
		t.Errorf("quarantined copy %s is %q (%v)", dest, b, err)
	}
	if b, err := os.ReadFile(f.path("sub/.git/config")); err != nil || string(b) != "before\n" {
		t.Errorf("the file put back is %q (%v)", b, err)
	}
}

func TestCleanGitlink(t *testing.T) {
	for l, want := range map[string]bool{
		"vendor/lib": true, "sub": true,
		"": false, "/etc": false, "../other": false, "a/../../b": false, "a//b": false, "./a": false, "a/.git/b": false, "a/.GIT": false,
	} {
		if got := cleanGitlink(l); got != want {
			t.Errorf("cleanGitlink(%q) = %v, want %v", l, got, want)
		}
	}
}

// A submodule's hooks directory made a symlink to files the sandbox wrote elsewhere in
// the project: the host's git would follow it, so the link is moved aside (a move of
// the hook through the link would be refused).
func TestWatchHooksLink(t *testing.T) {
	f := newFixture(t)
	f.repo(".git/modules/lib", "[core]\n\tworktree = ../../../lib\n")
	w := f.start()
	f.write("scripts/post-checkout", "#!/bin/sh\n")
	if err := os.RemoveAll(f.path(".git/modules/lib/hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../scripts", f.path(".git/modules/lib/hooks")); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if f.exists(".git/modules/lib/hooks") {
		t.Errorf("the hooks link is still in place: %q", f.warns)
	}
	if !f.exists("scripts/post-checkout") {
		t.Errorf("the file behind the link was moved instead of the link")
	}
	if !f.warned(f.path(".git/modules/lib/hooks/post-checkout"), "the symlink "+f.path(".git/modules/lib/hooks")) {
		t.Errorf("no warning names the link: %q", f.warns)
	}
}

// The checker reads a git dir through a descriptor opened without following a link:
// a directory on the way swapped for a symlink to another repository while a check
// reads does not make it read (and later put back into the project) that
// repository's files; a git dir behind a link is not read at all.
func TestPinDirReadsWhatWasOpened(t *testing.T) {
	f := newFixture(t)
	f.write("sub/.git/config", "[core]\n\tbare = false\n")
	other := filepath.Join(filepath.Dir(f.proj), "other")
	if err := os.MkdirAll(filepath.Join(other, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, ".git/config"), []byte("[remote \"o\"]\n\turl = https://user:token@host/r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Watcher{p: f.p}
	dir, release, ok := w.pinDir(f.path("sub/.git"))
	if !ok {
		t.Fatal("pinDir refused a plain directory")
	}
	if err := os.Rename(f.path("sub"), f.path("sub.real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", f.path("sub")); err != nil {
		t.Fatal(err)
	}
	b, err := readFile(filepath.Join(dir, "config"), maxMeta)
	release()
	if err != nil || string(b) != "[core]\n\tbare = false\n" {
		t.Errorf("read through the pinned directory: %q, %v; want the project's file", b, err)
	}
	if _, _, ok := w.pinDir(f.path("sub/.git")); ok {
		t.Errorf("pinDir reached a git dir through a symlink")
	}
}

// What took the name between the move and the put back (a sandbox's link, planted as
// soon as inotify told it the name was free) is moved out too, never replaced or
// followed: the version given is then at the name.
func TestPutBackMovesOutWhatTookTheName(t *testing.T) {
	f := newFixture(t)
	f.write("sub/.git/HEAD", "ref: refs/heads/main\n")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := f.path("sub/.git/config")
	if err := os.Symlink(victim, cfg); err != nil {
		t.Fatal(err)
	}
	w := &Watcher{p: f.p}
	parent, base, err := w.openParent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(parent)
	extra, err := w.putBack(parent, base, cfg, []byte("before\n"))
	if err != nil || len(extra) != 1 {
		t.Fatalf("putBack = %v, %v; want the link moved out once", extra, err)
	}
	if l, err := os.Readlink(extra[0]); err != nil || l != victim {
		t.Errorf("%s is not the link (%q, %v)", extra[0], l, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "host\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(cfg)
	if b, _ := os.ReadFile(cfg); err != nil || !fi.Mode().IsRegular() || string(b) != "before\n" {
		t.Errorf("the config is %v (%v) holding %q; want a regular file with the version given", fi, err, b)
	}
}
