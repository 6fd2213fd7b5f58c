package sockdir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// isAnchors takes only anchors-<something>, as os.MkdirTemp names them: never a
// project's socket directory, nor the bare prefix.
func TestIsAnchors(t *testing.T) {
	for name, want := range map[string]bool{
		"anchors-1234567": true, "anchors-x": true,
		"anchors-": false, "anchors": false, "0ff1ce01": false, "xanchors-1": false, "Anchors-1": false, "anchors-a/b": false,
	} {
		if got := isAnchors(name); got != want {
			t.Errorf("isAnchors(%q) = %v, want %v", name, got, want)
		}
	}
}

// MakeAnchors makes a new private anchors directory in runtime/devsandbox (making
// devsandbox/ when missing) and holds it: prune leaves it, even aged, until the
// session releases it.
func TestMakeAnchors(t *testing.T) {
	runtime := shortTemp(t)
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, release, err := MakeAnchors(runtime)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != filepath.Join(runtime, "devsandbox") || !isAnchors(filepath.Base(dir)) || mode(t, dir) != os.ModeDir|0o700 || mode(t, filepath.Dir(dir)) != os.ModeDir|0o700 {
		t.Fatalf("MakeAnchors made %s (%v, parent %v)", dir, mode(t, dir), mode(t, filepath.Dir(dir)))
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if got, err := PruneAnchors(runtime, os.Getuid(), time.Now(), false); err != nil || len(got) != 0 {
		t.Errorf("a held anchors directory: pruned %q, %v", got, err)
	}
	release()
	if got, err := PruneAnchors(runtime, os.Getuid(), time.Now(), false); err != nil || !slices.Equal(got, []string{dir}) {
		t.Errorf("released: pruned %q, %v; want %s", got, err, dir)
	}
	again, release, err := MakeAnchors(runtime)
	if err != nil || again == dir {
		t.Fatalf("a second MakeAnchors: %s, %v", again, err)
	}
	release()
}

// PruneAnchors removes an anchors directory a killed session left (over a minute
// old, nobody holds it), with its mount points; it keeps a held one, a young one,
// another user's (when the test can make one), the project socket directories
// (PruneRuntime's), and a link planted at an anchors name toward a host directory,
// neither followed nor removed, nor one planted inside a removed directory. A dry run
// names the same and removes nothing; a devsandbox/ others may enter is not pruned.
func TestPruneAnchors(t *testing.T) {
	runtime, parent := runtimeFixture(t)
	uid := os.Getuid()
	old := time.Now().Add(-time.Hour)
	host := filepath.Join(shortTemp(t), "host")
	if err := os.MkdirAll(filepath.Join(host, "precious"), 0o700); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, when time.Time) string {
		t.Helper()
		d := filepath.Join(parent, name)
		// As StageAnchors leaves them: a mount point per anchor, a directory or an
		// empty file; here also a link a sandbox could not plant, to the host.
		if err := os.MkdirAll(filepath.Join(d, "0"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "1"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(host, filepath.Join(d, "2")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	left := mk("anchors-111", old)
	held := mk("anchors-222", old)
	young := mk("anchors-333", time.Now())
	project := socketDirAt(t, parent, "0ff1ce01", old)
	link := filepath.Join(parent, "anchors-444")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(held)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	stays := []string{held, young, project, link, filepath.Join(host, "precious")}
	if uid == 0 {
		foreign := mk("anchors-555", old)
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		stays = append(stays, foreign)
	}
	for _, dry := range []bool{true, false} {
		got, err := PruneAnchors(runtime, uid, time.Now(), dry)
		if err != nil || !slices.Equal(got, []string{left}) {
			t.Errorf("dry run %v: %q, %v; want %q", dry, got, err, left)
		}
		if _, err := os.Lstat(left); (err == nil) != dry {
			t.Errorf("dry run %v: the left directory is there: %v", dry, err == nil)
		}
	}
	for _, d := range stays {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
	// PruneRuntime does not take an anchors directory for a socket directory.
	if got, _ := PruneRuntime(runtime, nil, uid, time.Now(), true); slices.ContainsFunc(got, func(d string) bool { return strings.Contains(d, "anchors-") }) {
		t.Errorf("PruneRuntime would remove %q", got)
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	release()
	if got, err := PruneAnchors(runtime, uid, time.Now(), false); err == nil || len(got) != 0 {
		t.Errorf("a devsandbox/ others may enter: %q, %v", got, err)
	}
}

// BenchmarkMakeAnchors is what a krun launch with anchors pays for its anchors
// directory, made and held, then removed and released; BenchmarkMkdirAnchors is the
// same without the hold, as krun made it before.
func BenchmarkMakeAnchors(b *testing.B) {
	runtime := b.TempDir()
	for b.Loop() {
		dir, release, err := MakeAnchors(runtime)
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(dir)
		release()
	}
}

func BenchmarkMkdirAnchors(b *testing.B) {
	runtime := b.TempDir()
	for b.Loop() {
		base := filepath.Join(runtime, "devsandbox")
		if err := os.MkdirAll(base, 0o700); err != nil {
			b.Fatal(err)
		}
		dir, err := os.MkdirTemp(base, anchorsPrefix)
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(dir)
	}
}
