package etcsnap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostTree makes a host directory like /etc/ssl: files, an executable, links (one
// relative, one to a directory the sandbox does not see), and nested directories.
func hostTree(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "ssl")
	for name, content := range map[string]string{
		"openssl.cnf":              "[ default ]\n",
		"certs/ca-certificates":    "-----BEGIN CERTIFICATE-----\n",
		"certs/java/cacerts":       "\xfe\xed\xfe\xed",
		"certs/empty/.keep":        "",
		"bin/rehash":               "#!/bin/sh\n",
		"deep/a/b/c/d/e/f/g.txt":   "g\n",
		"certs/odd \"name\"\n.pem": "odd\n", // quoted in the index
	} {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(d, "bin/rehash"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"certs/5ed36f99.0": "ca-certificates",
		"certs/evil":       attacker(t), // planted on the host: copied as a link, never followed
		"dangling":         "/nonexistent/x",
	} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// treeEntries are a snapshot's entries with the tree src at "ssl".
func treeEntries(t *testing.T, src string) []Entry {
	_, es := hostFiles(t, map[string]string{"passwd": "u:x:1000\n"})
	for i := range es {
		if es[i].Name == "ssl" {
			es[i] = Entry{Name: "ssl", Source: src, Tree: true}
		}
	}
	return es
}

// listing describes dir as the sandbox would see it: each name with its type, its
// permission bits for everyone, and its link target or content.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + l
		case fi.IsDir():
			out[rel] = "dir x=" + strconv.FormatBool(fi.Mode()&0o001 != 0)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file x=" + strconv.FormatBool(fi.Mode()&0o001 != 0) + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A tree is copied whole: the same names, kinds, contents and link targets as the
// host's, files 0444 (0555 executable), directories 0555; links are links, never
// followed (the planted one to the attacker's directory holds none of its files).
func TestTreeCopied(t *testing.T) {
	src := hostTree(t)
	es := treeEntries(t, src)
	root := filepath.Join(t.TempDir(), "etc")
	s := open(t, root, es)
	if !reflect.DeepEqual(s.Entries, es) || len(s.Notes) > 0 {
		t.Fatalf("the tree is not copied: %+v %q", s.Entries, s.Notes)
	}
	got, want := listing(t, filepath.Join(s.Path, "ssl")), listing(t, src)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the copy:\n%q\nthe host's:\n%q", got, want)
	}
	err := filepath.Walk(filepath.Join(s.Path, "ssl"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o444)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return nil
		case fi.IsDir(), strings.HasSuffix(p, "rehash"):
			want = 0o555
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		if fi.Name() == "passwd" {
			t.Errorf("%s: the attacker's file was copied", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if again := open(t, root, es); again.Built || again.Key != s.Key {
		t.Errorf("an unchanged tree is not reused: built %v, key %s then %s", again.Built, s.Key, again.Key)
	}
}

// Any change to the tree on the host (a file's content, an entry added, removed or
// renamed, a link retargeted, deep down) gives another key and a snapshot with it.
func TestTreeChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, d string)
	}{
		{"content, same size", func(t *testing.T, d string) { write(t, filepath.Join(d, "openssl.cnf"), "[ changed ]\n") }},
		{"deep content", func(t *testing.T, d string) { write(t, filepath.Join(d, "deep/a/b/c/d/e/f/g.txt"), "h\n") }},
		{"added", func(t *testing.T, d string) { write(t, filepath.Join(d, "certs/new.pem"), "x") }},
		{"removed", func(t *testing.T, d string) { must(t, os.Remove(filepath.Join(d, "certs/java/cacerts"))) }},
		{"renamed", func(t *testing.T, d string) {
			must(t, os.Rename(filepath.Join(d, "openssl.cnf"), filepath.Join(d, "openssl.conf")))
		}},
		{"link retargeted", func(t *testing.T, d string) {
			must(t, os.Remove(filepath.Join(d, "certs/5ed36f99.0")))
			must(t, os.Symlink("java/cacerts", filepath.Join(d, "certs/5ed36f99.0")))
		}},
		{"made executable", func(t *testing.T, d string) { must(t, os.Chmod(filepath.Join(d, "openssl.cnf"), 0o755)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := hostTree(t)
			es := treeEntries(t, src)
			root := filepath.Join(t.TempDir(), "etc")
			first := open(t, root, es)
			tc.change(t, src)
			second := open(t, root, es)
			if second.Key == first.Key || !second.Built {
				t.Fatalf("after the change: key %s (was %s), built %v", second.Key, first.Key, second.Built)
			}
			if got, want := listing(t, filepath.Join(second.Path, "ssl")), listing(t, src); !reflect.DeepEqual(got, want) {
				t.Errorf("the copy:\n%q\nthe host's:\n%q", got, want)
			}
		})
	}
}

// A tree the copy cannot show as the bind does stays a mount point, which the
// caller binds it over, and a note says why; the rest of the snapshot is used.
func TestTreeBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, d string) string // returns the tree's source
		why    string
	}{
		{"a fifo", func(t *testing.T, d string) string {
			must(t, unix.Mkfifo(filepath.Join(d, "certs/fifo"), 0o644))
			return d
		}, "not a file, a directory or a symbolic link"},
		{"a file kept from others", func(t *testing.T, d string) string {
			must(t, os.Chmod(filepath.Join(d, "openssl.cnf"), 0o640))
			return d
		}, "kept from other users"},
		{"a directory kept from others", func(t *testing.T, d string) string {
			must(t, os.Chmod(filepath.Join(d, "certs/java"), 0o750))
			return d
		}, "kept from other users"},
		{"the tree is a link", func(t *testing.T, d string) string {
			l := filepath.Join(t.TempDir(), "ssl")
			must(t, os.Symlink(d, l))
			return l
		}, "not a directory"},
		{"no tree", func(t *testing.T, d string) string { return d + "-gone" }, "no such file"},
		{"too many entries", func(t *testing.T, d string) string {
			for i := 0; i < MaxTreeEntries; i++ {
				must(t, os.Symlink("x", filepath.Join(d, "certs", "l"+strconv.Itoa(i))))
			}
			return d
		}, "more than 4096 entries"},
		{"too many files", func(t *testing.T, d string) string {
			for i := 0; i < MaxTreeStats; i++ {
				write(t, filepath.Join(d, "certs", "f"+strconv.Itoa(i)), "")
			}
			return d
		}, "more than 256 files and directories"},
		{"too many bytes", func(t *testing.T, d string) string {
			write(t, filepath.Join(d, "big"), strings.Repeat("x", MaxTreeBytes))
			return d
		}, "more than 8388608 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.change(t, hostTree(t))
			es := treeEntries(t, src)
			s := open(t, filepath.Join(t.TempDir(), "etc"), es)
			want := append([]Entry(nil), es...)
			for i := range want {
				if want[i].Tree {
					want[i] = Entry{Name: "ssl", Dir: true}
				}
			}
			if !reflect.DeepEqual(s.Entries, want) {
				t.Errorf("entries %+v, want %+v", s.Entries, want)
			}
			if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], tc.why) || !strings.HasPrefix(s.Notes[0], src+" is bound") {
				t.Errorf("notes %q, want one saying %q", s.Notes, tc.why)
			}
			if names := listing(t, filepath.Join(s.Path, "ssl")); len(names) != 1 {
				t.Errorf("the mount point holds %q", names)
			}
			for _, e := range es {
				if e.Name == "ssl" && !e.Tree {
					t.Error("Open changed the caller's entries")
				}
			}
		})
	}
}

// A tree that changed within the racy window gives no snapshot this once (ErrRacy:
// the launch binds it and copies the files one by one), and nothing is built for
// it; once the window is past, the snapshot is built with the tree copied.
func TestTreeRacy(t *testing.T) {
	src := hostTree(t)
	root := filepath.Join(t.TempDir(), "etc")
	t.Cleanup(func() { removeRoot(root) })
	es := []Entry{{Name: "ssl", Source: src, Tree: true}}
	s, err := Open(root, es, time.Now())
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, ErrRacy) {
		t.Fatalf("a fresh tree: Open = %v, want ErrRacy", err)
	}
	if n := names(t, root); len(n) != 0 {
		t.Errorf("a fresh tree left %q in the root", n)
	}
	// Changed while it was walked: the same.
	var calls int
	defer func() { walkedDir = nil }()
	walkedDir = func(rel string) {
		if calls++; calls == 1 {
			write(t, filepath.Join(src, "new.pem"), "x\n") // in the directory being listed
		}
	}
	s, err = Open(root, es, time.Now().Add(time.Minute))
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("a tree changed while it was walked: Open = %v, want ErrChanged", err)
	}
	walkedDir = nil
	s, err = Open(root, es, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Built || s.Entries[0].Dir || len(s.Notes) != 0 {
		t.Errorf("the tree once the window is past: built %v, entries %+v, notes %q", s.Built, s.Entries, s.Notes)
	}
}

// What the user can neither list nor enter (/etc/ssl/private, 0710 root:ssl-cert)
// is an empty directory of mode 0000, and a file the user cannot read an empty file
// of mode 0000: present, closed, as through the bind; prune removes them. The
// kernel's answer is the test's (as root, it says yes to everything).
func TestTreeClosedEntries(t *testing.T) {
	src := hostTree(t)
	must(t, os.Chmod(filepath.Join(src, "certs/java"), 0o700))
	must(t, os.Chmod(filepath.Join(src, "openssl.cnf"), 0o600))
	other := ident{uid: 65534, gid: 65534, groups: map[uint32]bool{}}
	w := &treeWalker{now: later(), t: &tree{}, id: other, kernel: func(fd int, name string, st *unix.Stat_t, mode uint32) bool {
		return other.allows(st, mode)
	}}
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	var st unix.Stat_t
	must(t, unix.Fstat(fd, &st))
	must(t, w.dir(fd, "", -1, &st))
	kinds := map[string]nodeKind{}
	for _, n := range w.t.nodes {
		kinds[n.rel] = n.kind
	}
	if kinds["certs/java"] != nodeClosedDir || kinds["openssl.cnf"] != nodeClosedFile || kinds["certs/ca-certificates"] != nodeFile {
		t.Fatalf("kinds %v", kinds)
	}
	if _, listed := kinds["certs/java/cacerts"]; listed {
		t.Error("the closed directory was listed")
	}
	root := t.TempDir()
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(rfd)
	es := []Entry{{Name: "ssl", Source: src, Tree: true}}
	kd := &keyed{stamps: make([]stamp, 1), trees: []*tree{w.t}, entries: es}
	must(t, build(rfd, "k", kd))
	sfd, err := unix.Open(filepath.Join(root, "k"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(sfd)
	if err := check(rfd, sfd, "k", kd); err != nil {
		t.Errorf("check of the built snapshot: %v", err)
	}
	for p, want := range map[string]os.FileMode{"ssl/certs/java": os.ModeDir, "ssl/openssl.cnf": 0} {
		fi, err := os.Lstat(filepath.Join(root, "k", p))
		if err != nil || fi.Mode() != want || fi.Size() != 0 && !fi.IsDir() {
			t.Errorf("%s: %v %v, want mode %v and empty", p, fi.Mode(), err, want)
		}
	}
	must(t, removeAt(rfd, "k"))
	if _, err := os.Lstat(filepath.Join(root, "k")); !os.IsNotExist(err) {
		t.Errorf("prune left the snapshot: %v", err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A launch whose trees did not change walks none of them: the index's stamps give
// the same key the walk gives, and the snapshot is checked against its stamps.
func TestTreeIndex(t *testing.T) {
	src := hostTree(t)
	es := treeEntries(t, src)
	root := filepath.Join(t.TempDir(), "etc")
	first := open(t, root, es)
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(rfd)
	idx := loadIndex(rfd, es)
	if idx == nil || !idx.holds(es) {
		t.Fatalf("no index that holds after the first launch: %+v", idx)
	}
	k, kd, err := key(es, later(), idx)
	must(t, err)
	if kd.walked != nil || kd.idx == nil || k != first.Key {
		t.Errorf("with the index: key %s (walk's %s), walked %v", k, first.Key, kd.walked != nil)
	}
	if again := open(t, root, es); again.Built || again.Key != first.Key {
		t.Errorf("an unchanged tree: built %v, key %s", again.Built, again.Key)
	}
	// For other entries, or another user, it does not answer.
	if other := append([]Entry{{Name: "x", Dir: true}}, es...); loadIndex(rfd, other) != nil {
		t.Error("an index is found for other entries")
	}
	idx.ID += " 4242"
	if idx.holds(es) {
		t.Error("the index holds for another user's groups")
	}
}

// A copy changed in the snapshot after it was checked (its directory made writable,
// a file added, sealed again) fails the index's stamps: the snapshot is checked in
// full, found damaged and rebuilt. A garbled index is no index.
func TestTreeIndexStale(t *testing.T) {
	src := hostTree(t)
	es := treeEntries(t, src)
	root := filepath.Join(t.TempDir(), "etc")
	first := open(t, root, es)
	certs := filepath.Join(first.Path, "ssl/certs")
	must(t, os.Chmod(certs, 0o755))
	write(t, filepath.Join(certs, "planted.pem"), "x")
	must(t, os.Chmod(certs, 0o555))
	first.Close()
	again := open(t, root, es)
	if !again.Built {
		t.Error("a tampered copy was reused")
	}
	if got, want := listing(t, filepath.Join(again.Path, "ssl")), listing(t, src); !reflect.DeepEqual(got, want) {
		t.Errorf("the copy:\n%q\nthe host's:\n%q", got, want)
	}
	ip := filepath.Join(root, indexName(es))
	must(t, os.Chmod(ip, 0o600))
	write(t, ip, "{garbage")
	if third := open(t, root, es); third.Built || third.Key != again.Key {
		t.Errorf("with a garbled index: built %v, key %s (want %s)", third.Built, third.Key, again.Key)
	}
	if idx := loadIndex(unixOpen(t, root), es); idx == nil || !idx.holds(es) {
		t.Error("the garbled index was not replaced")
	}
}

func unixOpen(t *testing.T, p string) int {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// An index of trees goes with the snapshot it answers for: pruning that snapshot
// removes the index, and keeps the index of a snapshot that stays. An index that
// cannot be read is a leftover too.
func TestTreeIndexPruned(t *testing.T) {
	src := hostTree(t)
	root := filepath.Join(t.TempDir(), "etc")
	oldEs := treeEntries(t, src)
	old := open(t, root, oldEs)
	newEs := append([]Entry{{Name: "extra", Dir: true}}, oldEs...) // another set of entries: another index
	recent := open(t, root, newEs)
	if old.Key == recent.Key {
		t.Fatal("the two entry sets share a snapshot")
	}
	garbled := filepath.Join(root, indexPrefix+"garbled")
	must(t, os.WriteFile(garbled, []byte("not an index\n"), 0o400))
	indexOf := func(es []Entry) string { return filepath.Join(root, indexName(es)) }
	for _, p := range []string{indexOf(oldEs), indexOf(newEs)} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("no index after the launch: %v", err)
		}
	}
	if _, err := Prune(root, 1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(indexOf(oldEs)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pruned snapshot's index is left: %v", err)
	}
	if _, err := os.Lstat(garbled); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a garbled index is left: %v", err)
	}
	if _, err := os.Lstat(indexOf(newEs)); err != nil {
		t.Errorf("the kept snapshot's index was pruned: %v", err)
	}
	if again := open(t, root, newEs); again.Built || again.Key != recent.Key {
		t.Errorf("the kept snapshot after pruning: built %v, key %s, want %s", again.Built, again.Key, recent.Key)
	}
}
