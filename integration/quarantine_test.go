//go:build integration

package integration

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's index checksum, not a security hash
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Guarantee 12, the other way round: what the watch does to what the sandbox wrote
// (moving it to the quarantine, putting a config back) happens in the project, never
// at a host path the sandbox names. The watch takes the paths it acts on from files
// the sandbox writes (the index's gitlinks) and reaches them through directories the
// sandbox can swap for symlinks; each test points such a path at a real repository
// beside the project, one with a hook (as pre-commit, husky or git-lfs install), and
// checks that the repository is left as it was.

// gitlinkIndex is a git index (version 2, SHA-1) holding one gitlink entry at path,
// with a valid checksum: what `git update-index --cacheinfo 160000,...` writes, for
// any path, including those git itself refuses to add.
func gitlinkIndex(path string) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, 1})
	entry := make([]byte, 40+20+2)
	binary.BigEndian.PutUint32(entry[24:], 0o160000)
	copy(entry[40:], bytes.Repeat([]byte{0xab}, 20))
	binary.BigEndian.PutUint16(entry[60:], uint16(len(path)))
	entry = append(entry, path...)
	for pad := 8 - (len(entry) % 8); pad > 0; pad-- {
		entry = append(entry, 0)
	}
	b.Write(entry)
	sum := sha1.Sum(b.Bytes()) //nolint:gosec // git's index checksum
	b.Write(sum[:])
	return b.Bytes()
}

// victimRepo makes a repository at rel beside the project with a hook, as hook
// managers leave them, and returns its directory.
func (p *project) victimRepo(rel string) string {
	p.t.Helper()
	dir := p.newRepo(rel)
	p.write(rel+"/.git/hooks/pre-commit", "#!/bin/sh\nexec pre-commit hook-impl\n")
	if err := os.Chmod(filepath.Join(dir, ".git/hooks/pre-commit"), 0o755); err != nil {
		p.t.Fatal(err)
	}
	mustHostGit(p.t, dir, "config", "filter.lfs.process", "git-lfs filter-process")
	return dir
}

// assertIntact fails unless the victim repository still has its git dir, hook and
// config.
func assertIntact(t *testing.T, victim string, r result) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(victim, ".git/config")); err == nil && !strings.Contains(string(b), "git-lfs filter-process") {
		t.Errorf("the run rewrote %s/.git/config:\n%s\n%s", victim, b, r)
	}
	for _, f := range []string{".git/HEAD", ".git/config", ".git/hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(victim, f)); err != nil {
			t.Errorf("the run moved %s, a file of a repository outside the project (%v)\n%s", filepath.Join(victim, f), err, r)
		}
	}
	mustHostGit(t, victim, "status", "--short")
	if strings.Contains(r.stderr, victim+"/.git") && strings.Contains(r.stderr, "was moved to") {
		t.Errorf("devsandbox reports moving %s/.git:\n%s", victim, r.stderr)
	}
}

// A gitlink whose path climbs out of the project (`../other`, which git refuses to
// add but the sandbox can write into the index) must not make the watch check, and
// quarantine, the repository it names.
func TestQuarantineStaysInProjectGitlinkDotDot(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		victim := p.victimRepo("other")
		p.write("proj/payload", string(gitlinkIndex("../other")))
		r := p.sandbox(iso, nil, `cat payload > .git/index && rm payload && echo planted`)
		if !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		assertIntact(t, victim, r)
		if !strings.Contains(r.stderr, `"../other"`) {
			t.Errorf("no warning names the gitlink the sandbox wrote:\n%s", r.stderr)
		}
	})
}

// A gitlink at a name the sandbox made a symlink out of the project must not make the
// watch act through the link.
func TestQuarantineStaysInProjectGitlinkSymlink(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		victim := p.victimRepo("other")
		p.write("proj/payload", string(gitlinkIndex("sub")))
		r := p.sandbox(iso, nil, `ln -s ../other sub && cat payload > .git/index && rm payload && echo planted`)
		if !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		assertIntact(t, victim, r)
	})
}

// A repository below the project at launch is watched at its path; a run that swaps a
// directory on the way for a symlink must not make the watch move, or write a config
// back, through the link.
func TestQuarantineStaysInProjectNestedSwapped(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		p.newRepo("proj/sub")
		victim := p.victimRepo("other")
		r := p.sandbox(iso, nil, `mv sub sub.real && ln -s ../other sub && echo planted`)
		if !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		assertIntact(t, victim, r)
	})
}

// What devsandbox removes (the session's /tmp at the end of the run, the sandbox home
// and state with `sandboxes rm`) is what the sandbox wrote: symlinks in it, in a
// directory its owner cannot enter included, are removed, never followed. A
// confirmation: this held before the test was written.
func TestRemovalFollowsNoLink(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		victim := p.path("victim")
		p.write("victim/keep.txt", "host\n")
		p.write("victim/sub/keep.txt", "host\n")
		plant := func(dir string) string {
			return `mkdir -p ` + dir + `/locked && ln -s ` + victim + ` ` + dir + `/abs && ln -s ` + victim + `/sub ` + dir + `/locked/in && ` +
				`ln -s ../../../../../../../../..` + victim + ` ` + dir + `/rel && chmod 000 ` + dir + `/locked`
		}
		p.mustSandbox(iso, nil, plant("/tmp")+` && `+plant("$HOME/planted"))
		intact := func(when string) {
			t.Helper()
			for _, f := range []string{"victim/keep.txt", "victim/sub/keep.txt"} {
				if b, err := os.ReadFile(p.path(f)); err != nil || string(b) != "host\n" {
					t.Fatalf("%s: %s is %q (%v)", when, p.path(f), b, err)
				}
			}
		}
		intact("after the run removed its /tmp")
		if r := run(t, p.dir, nil, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("sandboxes rm:\n%s", r)
		}
		if _, err := os.Lstat(filepath.Join(it.home, ".local/share/devsandbox", p.name())); !os.IsNotExist(err) {
			t.Fatalf("sandboxes rm left the sandbox home: %v", err)
		}
		intact("after sandboxes rm")
	})
}
