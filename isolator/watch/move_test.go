package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// moveAside acts in the project only: a directory on the way swapped for a symlink
// after the check fails the move, and nothing outside is moved or written.
func TestMoveAsideRefusesLinks(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(filepath.Dir(f.proj), "other")
	if err := os.MkdirAll(filepath.Join(outside, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, ".git/config"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.write("sub/.git/config", "sandbox\n")
	w := &Watcher{p: f.p}

	for _, tc := range []struct {
		name, path string
		swap       bool
	}{
		{"a directory swapped for a link", f.path("sub/.git/config"), true},
		{"a path that climbs out", filepath.Join(f.proj, "../other/.git/config"), false},
		{"a path outside", filepath.Join(outside, ".git/config"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.swap {
				if err := os.Rename(f.path("sub"), f.path("sub.real")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("../other", f.path("sub")); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := w.moveAside(tc.path, []byte("planted\n")); err == nil {
				t.Fatalf("moveAside(%s) succeeded", tc.path)
			}
			if b, err := os.ReadFile(filepath.Join(outside, ".git/config")); err != nil || string(b) != "host\n" {
				t.Fatalf("the file outside the project is %q (%v), want it untouched", b, err)
			}
		})
	}
}

// moveAside moves what lies in the project, and puts back the version given.
func TestMoveAsideInProject(t *testing.T) {
	f := newFixture(t)
	f.write("sub/.git/config", "sandbox\n")
	w := &Watcher{p: f.p}
	dest, restored, err := w.moveAside(f.path("sub/.git/config"), []byte("before\n"))
	if err != nil || !restored {
		t.Fatalf("moveAside: %v (restored %v)", err, restored)
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
