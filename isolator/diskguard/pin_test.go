package diskguard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// A watched directory the sandbox can rename (a writable bind below the project:
// the project's directories are the sandbox's to move) or replace with a link must
// not take the guard's eyes off its file system: the guard keeps reading the file
// system of the directory it found at the start. The reserve here is larger than
// any disk, so a guard that still reads it reports it low.
func TestPinnedStatfsFollowsTheDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sub", "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	statfs, release, err := PinStatfs([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	g := Guard{Reserve: 1 << 62, Paths: []string{dir}, Statfs: statfs}
	if err := g.Check(); !errors.Is(err, ErrLow) {
		t.Fatalf("before the move: %v; want ErrLow", err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub2")); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); !errors.Is(err, ErrLow) {
		t.Errorf("after the sandbox moved the watched directory away: %v; want ErrLow (the guard stopped watching)", err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); !errors.Is(err, ErrLow) {
		t.Errorf("after a link took the watched directory's place: %v; want ErrLow", err)
	}
}

// A path missing at the start stays unwatched (as Check skips it), whatever is made
// there later.
func TestPinStatfsMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	statfs, release, err := PinStatfs([]string{missing})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := statfs(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a path made after the start: %v; want ErrNotExist (unwatched)", err)
	}
}

// For's Guard reads the directories it pinned, not the paths: the run's guard
// (Run, For) keeps watching a writable bind the sandbox renamed away or replaced
// with a link, as PinStatfs's does.
func TestForWatchesThePinnedDirectories(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sub", "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: dir, Dest: "/data"}}}
	p.Limits.DiskReserve = 1 << 62
	g, release, err := For(p)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := g.Check(); !errors.Is(err, ErrLow) {
		t.Fatalf("before the move: %v; want ErrLow", err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub2")); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); !errors.Is(err, ErrLow) {
		t.Errorf("after the sandbox moved the watched bind's directory away: %v; want ErrLow (For's guard looked the path up again instead of reading the pinned directory)", err)
	}
}
