package pin

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What is read is the file pinned: after the path is swapped for a link to another
// file (a concurrent session's swap), ReadFile and ReadDir still read the one opened.
func TestReadPinnedAfterSwap(t *testing.T) {
	root := t.TempDir()
	for f, c := range map[string]string{"proj/.git/config": "REAL\n", "proj/.git/hooks/pre-commit": "HOOK\n", "secret/config": "SECRET\n", "secret/hooks/pre-commit": "SECRET HOOK\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	untrusted := []string{filepath.Join(root, "proj")}
	cfg, err := Open(filepath.Join(root, "proj/.git/config"), untrusted)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	hooks, err := Open(filepath.Join(root, "proj/.git/hooks"), untrusted)
	if err != nil {
		t.Fatal(err)
	}
	defer hooks.Close()
	if err := os.Rename(filepath.Join(root, "proj/.git"), filepath.Join(root, "proj/.git.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(root, "proj/.git")); err != nil {
		t.Fatal(err)
	}
	b, err := cfg.ReadFile()
	if err != nil || string(b) != "REAL\n" {
		t.Errorf("ReadFile = %q, %v; want the pinned REAL", b, err)
	}
	es, err := hooks.ReadDir()
	if err != nil || len(es) != 1 || es[0].Name != "pre-commit" || string(es[0].Content) != "HOOK\n" {
		t.Errorf("ReadDir = %+v, %v; want the pinned hook", es, err)
	}
	if _, err := cfg.ReadDir(); !errors.Is(err, ErrNotContent) {
		t.Errorf("ReadDir of a file: %v, want ErrNotContent", err)
	}
	if _, err := hooks.ReadFile(); !errors.Is(err, ErrNotContent) {
		t.Errorf("ReadFile of a directory: %v, want ErrNotContent", err)
	}
}

// A directory holding anything but regular files (a link, a FIFO, a subdirectory) and
// a file over the limit are not delivered as content; a FIFO does not hang the read.
func TestReadNotContent(t *testing.T) {
	for name, mk := range map[string]func(dir string) error{
		"link":   func(d string) error { return os.Symlink("/etc/passwd", filepath.Join(d, "x")) },
		"fifo":   func(d string) error { return syscall.Mkfifo(filepath.Join(d, "x"), 0o644) },
		"subdir": func(d string) error { return os.Mkdir(filepath.Join(d, "x"), 0o755) },
		"large":  func(d string) error { return os.WriteFile(filepath.Join(d, "x"), make([]byte, MaxContent+1), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := mk(dir); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.ReadDir(); !errors.Is(err, ErrNotContent) {
				t.Errorf("ReadDir: %v, want ErrNotContent", err)
			}
		})
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "fifo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ReadFile(); !errors.Is(err, ErrNotContent) {
		t.Errorf("ReadFile of a FIFO: %v, want ErrNotContent", err)
	}
}
