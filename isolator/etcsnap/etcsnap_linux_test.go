package etcsnap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// later is a time after every source a test wrote settled: no source is racy.
func later() time.Time { return time.Now().Add(time.Minute) }

// hostFiles writes files (name -> content) under a fresh host directory and returns
// the entries copying them, plus the mount points ssl/ and java/.
func hostFiles(t testing.TB, files map[string]string) (string, []Entry) {
	t.Helper()
	host := t.TempDir()
	var es []Entry
	for name, content := range files {
		p := filepath.Join(host, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		es = append(es, Entry{Name: name, Source: p})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	es = append(es, Entry{Name: "ssl", Dir: true}, Entry{Name: "java", Dir: true})
	return host, es
}

func open(t *testing.T, root string, es []Entry) *Snapshot {
	t.Helper()
	s, err := Open(root, es, later())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenBuildsSealedAndReuses(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"passwd": "u:x:1000\n", "hosts": "127.0.0.1 localhost\n", "ld.so.conf.d/libc.conf": "/usr/local/lib\n"})
	root := filepath.Join(t.TempDir(), "etc")
	s := open(t, root, es)
	if !s.Built {
		t.Error("first Open: Built = false")
	}
	if got := read(t, filepath.Join(s.Path, "passwd")); got != "u:x:1000\n" {
		t.Errorf("passwd = %q", got)
	}
	for name, want := range map[string]os.FileMode{".": 0o555, "passwd": 0o444, "hosts": 0o444, "ld.so.conf.d": 0o555, "ld.so.conf.d/libc.conf": 0o444, "ssl": 0o555, "java": 0o555} {
		fi, err := os.Lstat(filepath.Join(s.Path, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want || fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	again := open(t, root, es)
	if again.Built || again.Path != s.Path {
		t.Errorf("second Open: Built %v, %s; want the reused %s", again.Built, again.Path, s.Path)
	}
	d, err := again.Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var a, b unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(s.Path, &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino {
		t.Error("Dir is not the snapshot directory")
	}
}

// A host file that changes between runs is seen changed in the next one: written in
// place with the same size and its mtime set back, or replaced by rename.
func TestOpenSeesChangedSources(t *testing.T) {
	host, es := hostFiles(t, map[string]string{"passwd": "u:x:1000\n", "hosts": "127.0.0.1 a\n"})
	root := filepath.Join(t.TempDir(), "etc")
	first := open(t, root, es)

	old, err := os.Stat(filepath.Join(host, "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "hosts"), []byte("127.0.0.1 b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// utimensat can set the mtime back, never the ctime.
	if err := os.Chtimes(filepath.Join(host, "hosts"), old.ModTime(), old.ModTime()); err != nil {
		t.Fatal(err)
	}
	second := open(t, root, es)
	if second.Path == first.Path || read(t, filepath.Join(second.Path, "hosts")) != "127.0.0.1 b\n" {
		t.Fatalf("after an in-place write: %s holds %q", second.Path, read(t, filepath.Join(second.Path, "hosts")))
	}

	tmp := filepath.Join(host, "passwd.new")
	if err := os.WriteFile(tmp, []byte("u:x:1001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(host, "passwd")); err != nil {
		t.Fatal(err)
	}
	third := open(t, root, es)
	if got := read(t, filepath.Join(third.Path, "passwd")); got != "u:x:1001\n" {
		t.Fatalf("after a rename: passwd = %q", got)
	}
	if read(t, filepath.Join(first.Path, "passwd")) != "u:x:1000\n" {
		t.Error("a snapshot in use changed")
	}
}

// A source that changed in the last seconds is not keyed: a second write within the
// same timestamp tick would keep the stat tuple.
func TestOpenRacy(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"hosts": "x\n"})
	if _, err := Open(filepath.Join(t.TempDir(), "etc"), es, time.Now()); !errors.Is(err, ErrRacy) {
		t.Fatalf("Open of a file written just now: %v; want ErrRacy", err)
	}
}

func TestKey(t *testing.T) {
	host, es := hostFiles(t, map[string]string{"passwd": "a\n", "hosts": "b\n"})
	k1, err := Key(es, later())
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := Key(es, later()); k2 != k1 {
		t.Errorf("Key not stable: %s, %s", k1, k2)
	}
	for name, change := range map[string]func([]Entry) []Entry{
		"mount point added": func(es []Entry) []Entry { return append(es, Entry{Name: "pki", Dir: true}) },
		"mount point kind":  func(es []Entry) []Entry { es[len(es)-1].Dir = false; return es },
		"source moved": func(es []Entry) []Entry {
			es[0].Source = filepath.Join(host, "passwd") // es[0] is hosts
			return es
		},
		"source gone": func(es []Entry) []Entry {
			es[0].Source = filepath.Join(host, "missing")
			return es
		},
	} {
		k, err := Key(change(append([]Entry(nil), es...)), later())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if k == k1 {
			t.Errorf("%s: key unchanged", name)
		}
	}
	if err := os.Remove(filepath.Join(host, "hosts")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("passwd", filepath.Join(host, "hosts")); err != nil {
		t.Fatal(err)
	}
	if k, _ := Key(es, later()); k == k1 {
		t.Error("a source replaced by a link to another file: key unchanged")
	}
	if err := os.Remove(filepath.Join(host, "hosts")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(host, "hosts"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(es, later()); err == nil {
		t.Error("a FIFO source: no error")
	}
}

func TestValidate(t *testing.T) {
	for _, es := range [][]Entry{
		{{Name: "/passwd", Source: "/etc/passwd"}},
		{{Name: "../passwd", Source: "/etc/passwd"}},
		{{Name: "a/../b", Source: "/etc/passwd"}},
		{{Name: ".tmp-x", Dir: true}},
		{{Name: "passwd", Source: "/etc/passwd", Dir: true}},
		{{Name: "ssl", Dir: true}, {Name: "ssl", Dir: true}},
		{{Name: "passwd", Source: "/etc/passwd"}, {Name: "passwd/x", Source: "/etc/hosts"}},
	} {
		if Validate(es) == nil {
			t.Errorf("Validate(%+v) = nil", es)
		}
	}
}

// Concurrent launches of one key all get the same, complete snapshot.
func TestOpenConcurrent(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"passwd": "u\n", "group": "g\n", "a/b/c": "c\n"})
	root := filepath.Join(t.TempDir(), "etc")
	var wg sync.WaitGroup
	paths := make([]string, 8)
	errs := make([]error, 8)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(root, es, later())
			if err == nil {
				paths[i] = s.Path
				defer s.Close()
				if got, _ := os.ReadFile(filepath.Join(s.Path, "a/b/c")); string(got) != "c\n" {
					errs[i] = errors.New("incomplete snapshot: a/b/c = " + string(got))
				}
			}
			if errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Errorf("launch %d: %s, %v; want %s", i, paths[i], errs[i], paths[0])
		}
	}
	names, _ := os.ReadDir(root)
	if len(names) != 1 {
		t.Errorf("root holds %d entries, want the one snapshot", len(names))
	}
}

// A root that cannot be made (a read-only or full state directory; here a file in the
// way) is an error: the caller copies the files one by one.
func TestOpenRootUnusable(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"passwd": "u\n"})
	f := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(filepath.Join(f, "etc"), es, later()); err == nil {
		s.Close()
		t.Fatal("Open under a file succeeded")
	}
}

// TestKeyText pins the key's text to the fmt form it had: every stamp line appended
// with strconv is byte for byte what fmt.Sprintf makes, so a snapshot keyed before
// is found again.
func TestKeyText(t *testing.T) {
	for _, tc := range []struct {
		e Entry
		s stamp
	}{
		{Entry{Name: "passwd", Source: "/etc/passwd"}, stamp{dev: 2049, ino: 131, mode: 0o100644, size: 1266,
			mtime: unix.Timespec{Sec: 1700000000, Nsec: 5}, ctime: unix.Timespec{Sec: 1700000001, Nsec: 999999999}}},
		{Entry{Name: "ld.so.conf.d/a \"b\"\n.conf", Source: "/etc/ld.so.conf.d/a \"b\"\n.conf"}, stamp{dev: ^uint64(0), ino: ^uint64(0), mode: 0o100444,
			mtime: unix.Timespec{Sec: 0, Nsec: 0}, ctime: unix.Timespec{Sec: -1, Nsec: 123456789}}},
		{Entry{Name: "é", Source: "/etc/\xff"}, stamp{size: 1 << 40, mtime: unix.Timespec{Nsec: 100000000}, ctime: unix.Timespec{Nsec: 10}}},
		{Entry{Name: "n", Source: "/n"}, stamp{mtime: unix.Timespec{Nsec: -3}}},
	} {
		e, s := tc.e, tc.s
		want := fmt.Sprintf("%q %q %d %d %o %d %d.%09d %d.%09d\n", e.Name, e.Source, s.dev, s.ino, s.mode, s.size,
			s.mtime.Sec, s.mtime.Nsec, s.ctime.Sec, s.ctime.Nsec)
		if got := string(appendStamp(nil, e, s)); got != want {
			t.Errorf("stamp line:\n got %q\nwant %q", got, want)
		}
	}
	// A whole key over a mount point, a missing source and a copy, as fmt wrote it.
	dir := t.TempDir()
	src := filepath.Join(dir, "hosts")
	if err := os.WriteFile(src, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Name: "ssl", Dir: true}, {Name: "gone", Source: filepath.Join(dir, "gone")}, {Name: "hosts", Source: src}}
	got, kd, err := key(entries, later(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", format)
	fmt.Fprintf(h, "%q mount dir=%t\n", "ssl", true)
	fmt.Fprintf(h, "%q missing\n", "gone")
	s := kd.stamps[2]
	fmt.Fprintf(h, "%q %q %d %d %o %d %d.%09d %d.%09d\n", "hosts", src, s.dev, s.ino, s.mode, s.size,
		s.mtime.Sec, s.mtime.Nsec, s.ctime.Sec, s.ctime.Nsec)
	if want := hex.EncodeToString(h.Sum(nil)[:16]); got != want {
		t.Fatalf("key %s, want %s", got, want)
	}
}

// A file of given content (the sandbox's /etc/passwd) is written as given, keyed by
// that content: the same content reuses the snapshot, another one is another
// snapshot, and a file of the key's content but another size is rebuilt.
func TestOpenContent(t *testing.T) {
	_, es := hostFiles(t, map[string]string{"hosts": "127.0.0.1 localhost\n"})
	with := func(content string) []Entry {
		return append(slices.Clone(es), Entry{Name: "passwd", Content: content})
	}
	root := filepath.Join(t.TempDir(), "etc")
	a := open(t, root, with("u:x:1000:1000::/home/a:/bin/sh\n"))
	if got := read(t, filepath.Join(a.Path, "passwd")); got != "u:x:1000:1000::/home/a:/bin/sh\n" || !a.Built {
		t.Errorf("first Open: passwd %q, Built %v", got, a.Built)
	}
	if fi, err := os.Lstat(filepath.Join(a.Path, "passwd")); err != nil || fi.Mode() != 0o444 {
		t.Errorf("passwd: %v %v, want a 0444 file", fi, err)
	}
	if again := open(t, root, with("u:x:1000:1000::/home/a:/bin/sh\n")); again.Built || again.Key != a.Key {
		t.Errorf("the same content: Built %v, key %s against %s", again.Built, again.Key, a.Key)
	}
	b := open(t, root, with("u:x:1000:1000::/home/b:/bin/sh\n"))
	if b.Key == a.Key || !b.Built || read(t, filepath.Join(b.Path, "passwd")) != "u:x:1000:1000::/home/b:/bin/sh\n" {
		t.Errorf("another content: key %s (the first %s), Built %v", b.Key, a.Key, b.Built)
	}
	// Damaged: the key's snapshot holds a passwd of another size (and no run holds it).
	b.Close()
	p := filepath.Join(b.Path, "passwd")
	must(t, os.Chmod(b.Path, 0o755))
	must(t, os.Remove(p))
	must(t, os.WriteFile(p, []byte("u:x:1000:1000::/:/bin/sh\n"), 0o444))
	must(t, os.Chmod(b.Path, 0o555))
	c := open(t, root, with("u:x:1000:1000::/home/b:/bin/sh\n"))
	if got := read(t, filepath.Join(c.Path, "passwd")); got != "u:x:1000:1000::/home/b:/bin/sh\n" || !c.Built {
		t.Errorf("after damage: passwd %q, Built %v", got, c.Built)
	}
}

func TestValidateContent(t *testing.T) {
	for _, e := range []Entry{
		{Name: "passwd", Content: "x\n", Source: "/etc/passwd"},
		{Name: "passwd", Content: "x\n", Dir: true},
		{Name: "passwd", Content: "x\n", Tree: true, Source: "/etc/passwd"},
	} {
		if err := Validate([]Entry{e}); err == nil {
			t.Errorf("Validate(%+v) = nil", e)
		}
	}
	if err := Validate([]Entry{{Name: "passwd", Content: "x\n"}}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
