package etcsnap

import (
	"os"
	"path/filepath"
	"testing"
)

// attacker is a directory someone else controls, with a file the host must neither
// show to a sandbox nor change nor remove.
func attacker(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "passwd"), []byte("root::0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

func intact(t *testing.T, d string) {
	t.Helper()
	if got := read(t, filepath.Join(d, "passwd")); got != "root::0:0::/:/bin/sh\n" {
		t.Errorf("the attacker's file changed: %q", got)
	}
	fi, err := os.Stat(d)
	if err != nil {
		t.Fatalf("the attacker's directory is gone: %v", err)
	}
	if fi.Mode().Perm() != 0o700 && fi.Mode().Perm() != 0o755 {
		t.Errorf("the attacker's directory mode changed to %v", fi.Mode())
	}
}

// A link planted where the snapshot of this key goes is neither used nor followed:
// the launch gets a snapshot of the host files, built in place of the link.
func TestAttackLinkAtSnapshotName(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"passwd": "u:x:1000\n"})
	root := filepath.Join(t.TempDir(), "etc")
	k, err := Key(es, later())
	if err != nil {
		t.Fatal(err)
	}
	evil := attacker(t)
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, filepath.Join(root, k)); err != nil {
		t.Fatal(err)
	}
	s := open(t, root, es)
	if got := read(t, filepath.Join(s.Path, "passwd")); got != "u:x:1000\n" {
		t.Errorf("the snapshot shows %q", got)
	}
	if fi, err := os.Lstat(s.Path); err != nil || !fi.IsDir() {
		t.Errorf("%s is not a directory: %v", s.Path, err)
	}
	intact(t, evil)
}

// A snapshot whose files were swapped for links, or that gained a name, is not
// reused: it is rebuilt, and what the links point at is left alone.
func TestAttackTamperedSnapshot(t *testing.T) {
	for name, tamper := range map[string]func(t *testing.T, dir, evil string){
		"file swapped for a link": func(t *testing.T, dir, evil string) {
			chmod(t, dir, 0o755)
			if err := os.Remove(filepath.Join(dir, "passwd")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(evil, "passwd"), filepath.Join(dir, "passwd")); err != nil {
				t.Fatal(err)
			}
			chmod(t, dir, 0o555)
		},
		"ld.so.preload added": func(t *testing.T, dir, evil string) {
			chmod(t, dir, 0o755)
			if err := os.WriteFile(filepath.Join(dir, "ld.so.preload"), []byte(evil+"/x.so\n"), 0o444); err != nil {
				t.Fatal(err)
			}
			chmod(t, dir, 0o555)
		},
		"directory made writable": func(t *testing.T, dir, evil string) { chmod(t, dir, 0o755) },
		"mount point swapped for a link": func(t *testing.T, dir, evil string) {
			chmod(t, dir, 0o755)
			chmod(t, filepath.Join(dir, "ssl"), 0o755)
			if err := os.Remove(filepath.Join(dir, "ssl")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(evil, filepath.Join(dir, "ssl")); err != nil {
				t.Fatal(err)
			}
			chmod(t, dir, 0o555)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, es := hostFiles(t, map[string]string{"passwd": "u:x:1000\n"})
			root := filepath.Join(t.TempDir(), "etc")
			first, err := Open(root, es, later())
			if err != nil {
				t.Fatal(err)
			}
			first.Close()
			evil := attacker(t)
			tamper(t, first.Path, evil)
			s := open(t, root, es)
			if !s.Built {
				t.Error("the tampered snapshot was reused")
			}
			if got := read(t, filepath.Join(s.Path, "passwd")); got != "u:x:1000\n" {
				t.Errorf("the snapshot shows %q", got)
			}
			if _, err := os.Lstat(filepath.Join(s.Path, "ld.so.preload")); err == nil {
				t.Error("the planted name is still there")
			}
			intact(t, evil)
		})
	}
}

// Pruning removes links and snapshots without following a link anywhere in them, and
// never a snapshot a run holds.
func TestAttackPruneFollowsNoLink(t *testing.T) {
	root := filepath.Join(t.TempDir(), "etc")
	evil := attacker(t)
	var held *Snapshot
	for i := 0; i < 5; i++ {
		_, es := hostFiles(t, map[string]string{"passwd": "p\n", "hosts": string(rune('a' + i))})
		s, err := Open(root, es, later())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			held = s // the oldest, in use by a running sandbox
			defer held.Close()
		} else {
			s.Close()
		}
	}
	// A snapshot-named link to the attacker's directory, and a snapshot with a link
	// inside, to be pruned.
	if err := os.Symlink(evil, filepath.Join(root, "0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(root, ".trash-planted")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, filepath.Join(old, "ssl")); err != nil {
		t.Fatal(err)
	}
	if _, err := Prune(root, 1, false); err != nil {
		t.Fatal(err)
	}
	intact(t, evil)
	if _, err := os.Stat(filepath.Join(held.Path, "passwd")); err != nil {
		t.Errorf("the snapshot in use was pruned: %v", err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	// The newest and the one in use (one name when they are the same by age).
	if len(left) == 0 || len(left) > 2 {
		t.Errorf("after Prune(1): %v; want the newest snapshot and the one in use", left)
	}
	for _, n := range left {
		if !isKey(n) {
			t.Errorf("after Prune: %s is left", n)
		}
	}
}

// A root that is a link, or that others can write, is refused: the caller copies.
func TestAttackRoot(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"passwd": "u\n"})
	evil := attacker(t)
	link := filepath.Join(t.TempDir(), "etc")
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(link, es, later()); err == nil {
		s.Close()
		t.Error("Open under a linked root succeeded")
	}
	shared := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	chmod(t, shared, 0o777)
	if s, err := Open(shared, es, later()); err == nil {
		s.Close()
		t.Error("Open under a world-writable root succeeded")
	}
	intact(t, evil)
	if ents, _ := os.ReadDir(evil); len(ents) != 1 {
		t.Errorf("something was written under the linked root: %d entries", len(ents))
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
