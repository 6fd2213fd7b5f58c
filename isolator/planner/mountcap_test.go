package planner

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestPlantedFilesCapMounts: files a sandbox can create in the project (toolchain and
// mise files in sub-directories and the top directory's mise.*.toml, masked .env
// files, directories deep enough to need an anchor each) each add a mount to the next
// launch. bwrap 0.8 takes seconds for a thousand and refuses more than about 3,000
// (9,000 arguments), so a sandbox could plant enough of them to make its user's next
// launch crawl or fail obscurely: the plan is refused instead, with an error naming
// how many mounts, from where, and what to do; nothing is left unprotected.
func TestPlantedFilesCapMounts(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, proj string)
		where string // a file the error names
	}{
		{"subdir tool files", func(t *testing.T, proj string) {
			for i := range maxMounts / 2 {
				writeFile(t, fmt.Sprintf("%s/a/b/d%d/.tool-versions", proj, i), "nodejs 22\n")
			}
		}, "/a/b/d0/.tool-versions"},
		{"top mise profiles", func(t *testing.T, proj string) {
			for i := range maxMounts {
				writeFile(t, fmt.Sprintf("%s/mise.p%d.toml", proj, i), "[env]\n")
			}
		}, "/mise.p0.toml"},
		{"masked files", func(t *testing.T, proj string) {
			for i := range maxMounts {
				writeFile(t, fmt.Sprintf("%s/e/.env.%d", proj, i), "")
			}
		}, "/e/.env.0"},
		{"deep anchors", func(t *testing.T, proj string) {
			// Few files, each at the end of its own chain of directories.
			for i := range maxMounts/40 + 1 {
				writeFile(t, fmt.Sprintf("%s/x%d/%s.tool-versions", proj, i, strings.Repeat("d/", 40)), "nodejs 22\n")
			}
		}, "/x0/d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.plant(t, f.proj)
			_, _, err := f.tryBuild(f.load(t))
			if !errors.Is(err, isolator.ErrProtection) {
				t.Fatalf("Build = %v, want an ErrProtection error", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), f.proj+c.where) {
				t.Errorf("the error does not name %s: %v", f.proj+c.where, err)
			}
		})
	}
	// Under the cap, the same kind of files are all protected.
	f := newFixture(t)
	for i := range 20 {
		writeFile(t, fmt.Sprintf("%s/a/d%d/.tool-versions", f.proj, i), "nodejs 22\n")
	}
	p, _ := f.build(t, f.load(t))
	if len(p.Subdir.Present) != 20 {
		t.Errorf("Subdir.Present has %d files, want 20", len(p.Subdir.Present))
	}
}

// TestProtectedFileWithLinks: a file host tools run with a second name in the project
// (a hard link a sandboxed program made when it created the file) is refused: the
// read-only bind covers one name, and the sandbox would rewrite it through the other,
// which the watch does not look at. Both the top directory's and a sub-directory's.
func TestProtectedFileWithLinks(t *testing.T) {
	for _, rel := range []string{"mise.toml", "sub/.tool-versions", "sub/mise.ci.toml"} {
		t.Run(rel, func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, f.proj+"/"+rel, "[env]\n")
			if err := os.Link(f.proj+"/"+rel, f.proj+"/innocent.txt"); err != nil {
				t.Fatal(err)
			}
			_, _, err := f.tryBuild(f.load(t))
			if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), f.proj+"/innocent.txt") {
				t.Fatalf("Build = %v, want an ErrProtection error naming the other link", err)
			}
			if err := os.Remove(f.proj + "/innocent.txt"); err != nil {
				t.Fatal(err)
			}
			f.build(t, f.load(t)) // one link again: read-only
		})
	}
}

// TestProtectedNameNotUTF8: a file to mask or protect under a name that is not UTF-8
// is refused: docker's and podman's JSON APIs carry a mount's paths as JSON strings,
// where Go's encoder replaces the invalid bytes with U+FFFD, so the engine would
// mount another path (one the sandbox can create) and leave the file as it is.
func TestProtectedNameNotUTF8(t *testing.T) {
	for _, rel := range []string{"d\xff/.tool-versions", "d\xff/e/.env", "mise.\xfe.toml"} {
		t.Run(fmt.Sprintf("%q", rel), func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, f.proj+"/"+rel, "x\n")
			_, _, err := f.tryBuild(f.load(t))
			if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("Build = %v, want an ErrProtection error about the name", err)
			}
		})
	}
}

// TestSubdirLinkToDirectory: a toolchain file name in a sub-directory that is a
// symlink to a directory of the project is no file a tool can read, so its target is
// not made read-only: else a sandbox could plant sub/.tool-versions -> ../src (or
// -> ../.git) to have the next launch make the user's directory read-only. conf.d,
// a directory by name, is protected through a link as before.
func TestSubdirLinkToDirectory(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	writeFile(t, f.proj+"/src/main.go", "package main\n")
	writeFile(t, f.proj+"/confs/a.toml", "[env]\n")
	symlink(t, "../src", f.proj+"/sub/.tool-versions")
	symlink(t, "../.git", f.proj+"/sub/rust-toolchain")
	symlink(t, "../../../confs", f.proj+"/sub/.config/mise/conf.d")
	p, _ := f.build(t, f.load(t))
	for _, m := range p.Mounts {
		if m.ReadOnly && (m.Source == f.proj+"/src" || m.Source == f.proj+"/.git") {
			t.Errorf("a link planted under a toolchain file's name made %s read-only (%s)", m.Source, m.Why)
		}
	}
	found := false
	for _, m := range p.Mounts {
		found = found || m.ReadOnly && m.Source == f.proj+"/confs"
	}
	if !found {
		t.Errorf("the conf.d directory a link names is not read-only")
	}
}
