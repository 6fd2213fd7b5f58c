package tmpdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAcquireRelease(t *testing.T) {
	base := filepath.Join(t.TempDir(), "tmp")
	s, err := Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("session dir %s: %v %v", s.Path, fi, err)
	}
	if s.Lost() {
		t.Fatal("fresh session reported lost")
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("session dir still there after Release: %v", err)
	}
}

func TestLost(t *testing.T) {
	s, err := Acquire(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if err := os.RemoveAll(s.Path); err != nil {
		t.Fatal(err)
	}
	if !s.Lost() {
		t.Fatal("removed session dir not reported lost")
	}
}

func TestCleanOrphans(t *testing.T) {
	base := t.TempDir()
	old := time.Now().Add(-49 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	orphan := mk("orphan", old)
	young := mk("young", time.Now())
	live, err := Acquire(base)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if err := os.Chtimes(live.Path, old, old); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}

	if n := CleanOrphans(base, time.Now(), MaxAge); n != 1 {
		t.Fatalf("removed %d dirs, want 1", n)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Error("old unlocked dir not removed")
	}
	for _, p := range []string{young, live.Path, target, filepath.Join(base, "link")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
