package maskscan

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestScanFirst: a scan without a cache, the first scan with one and the next
// (which reads nothing) all agree with the reference walk.
func TestScanFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Matcher
		tree []string // below a directory holding the root, proj when it has one
		want []string
	}{
		{"defaults", defaults, []string{
			".env", ".env.local", "README.md", "env", "sub/deeper/.env.production", "sub/.envrc",
			".git/.env", "node_modules/pkg/.env", "src/node_modules/.env", "vendor/.git/config/.env",
			"sub/.env.d/inner", "sub/.env.d/.env", "empty/",
		}, []string{".env", ".env.local", "sub/.env.d/.env", "sub/deeper/.env.production"}},
		{"symlinks", defaults, []string{
			"outside/.env", "proj/linkdir -> ../outside", "proj/app/.env -> ../secret", "proj/secret",
			"proj/dangling/.env.x -> missing", "proj/dirlink/.env -> ../app",
		}, []string{"app/.env@", "dangling/.env.x@", "dirlink/.env@"}},
		{"allow", Matcher{Mask: defaults.Mask, Allow: []string{".env.example", "*.sample"}}, []string{
			".env", ".env.example", "a/.env.sample", "a/.env.local",
		}, []string{".env", "a/.env.local"}},
		{"nothing skipped", Matcher{Mask: []string{".env"}}, []string{
			".git/.env", "node_modules/a/.env",
		}, []string{".git/.env", "node_modules/a/.env"}},
		{"globs", Matcher{Mask: []string{"*.pem", "id_[rd]sa", `\*`}}, []string{
			"a/key.pem", "b/id_rsa", "b/id_dsa", "b/id_ecdsa", "c/*", "c/x",
		}, []string{"a/key.pem", "b/id_dsa", "b/id_rsa", "c/*"}},
		{"marks", Matcher{Mask: defaults.Mask, Skip: defaults.Skip, Mark: []string{".git"}}, []string{
			".git/config", "vendor/lib/.git/HEAD", "sub/.git", "node_modules/x/.git/HEAD", "a/.git -> ../vendor", "sub/.env",
		}, []string{".git", "a/.git@", "sub/.env", "sub/.git", "vendor/lib/.git"}},
		{"glob marks", Matcher{Mask: defaults.Mask, Skip: defaults.Skip, Mark: []string{".git", "rust-toolchain.toml", "mise.*.toml", "conf.d", "*.mark", "m?.toml"}}, []string{
			"a/rust-toolchain.toml", "a/b/mise.ci.toml", "a/mise.toml", "c/.config/mise/conf.d/x.toml", "node_modules/p/mise.x.toml", "d/rust-toolchain.toml.bak",
			"e/x.mark", "e/.mark", "e/mx.toml", "e/m.toml", "e/mark",
		}, []string{"a/b/mise.ci.toml", "a/rust-toolchain.toml", "c/.config/mise/conf.d", "e/.mark", "e/mx.toml", "e/x.mark"}},
		{"empty tree", defaults, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			build(t, dir, tc.tree...)
			root := dir
			if _, err := os.Stat(dir + "/proj"); err == nil {
				root = dir + "/proj"
			}
			want := reference(t, root, tc.m)
			equal(t, "reference", rel(root, want), tc.want)
			cache := filepath.Join(t.TempDir(), "cache")
			for i, file := range []string{"", cache, cache} {
				got, st := scanT(t, later(), root, tc.m, file)
				equal(t, "scan", rel(root, got), tc.want)
				if i == 2 && (st.reads != 0 || st.wrote) {
					t.Errorf("warm scan: %+v, want no reads and no write", st)
				}
			}
		})
	}
}

// TestScanChanges: after each change, the next scan with the cache agrees with the
// reference walk and reads only the directories the change touched.
func TestScanChanges(t *testing.T) {
	tree := []string{
		"a/b/c/d/main.go", "a/b/c/d/e/", "a/b/x.go", "x/y/.env.local", "x/y/z/", "z/", ".env", "src/app/",
		"node_modules/p/index.js", "src/.git/HEAD",
	}
	for _, tc := range []struct {
		name  string
		op    func(f *fsys)
		want  []string
		reads int
	}{
		{"nothing", func(f *fsys) {}, []string{".env", "x/y/.env.local"}, 0},
		{"create in a deep directory", func(f *fsys) { f.write("a/b/c/d/.env") },
			[]string{".env", "a/b/c/d/.env", "x/y/.env.local"}, 1},
		{"create an unmasked file", func(f *fsys) { f.write("a/b/c/d/notes.txt") },
			[]string{".env", "x/y/.env.local"}, 1},
		{"delete", func(f *fsys) { f.remove("x/y/.env.local") }, []string{".env"}, 1},
		{"rename a directory", func(f *fsys) { f.rename("x/y", "z/w") },
			[]string{".env", "z/w/.env.local"}, 4}, // x, z, z/w and z/w/z
		{"rename a file", func(f *fsys) { f.rename("x/y/.env.local", "x/y/env.local") }, []string{".env"}, 1},
		{"new directory with .env", func(f *fsys) { f.mkdir("src/app/new"); f.write("src/app/new/.env") },
			[]string{".env", "src/app/new/.env", "x/y/.env.local"}, 2},
		{"delete a directory", func(f *fsys) { f.remove("x") }, []string{".env"}, 1},
		{"replace a directory by a symlink", func(f *fsys) { f.remove("x/y"); f.symlink("../a", "x/y") },
			[]string{".env"}, 1},
		{"symlinked .env", func(f *fsys) { f.symlink("../../x/y/.env.local", "a/b/.env") },
			[]string{".env", "a/b/.env@", "x/y/.env.local"}, 1},
		{"in a skipped directory", func(f *fsys) { f.write("node_modules/p/.env"); f.write("src/.git/.env") },
			[]string{".env", "x/y/.env.local"}, 0},
		{"mtime set back", func(f *fsys) {
			// What a process in the sandbox could do to hide a change: the ctime shows it.
			d := f.abs("a/b/c/d")
			before := lstamp(f.t, d)
			build(f.t, d, ".env")
			if err := os.Chtimes(d, time.Time{}, time.Unix(0, before.mtime)); err != nil {
				f.t.Fatal(err)
			}
			if after := lstamp(f.t, d); after.mtime != before.mtime || after.ctime == before.ctime {
				f.t.Skipf("the ctime did not change: %+v, then %+v", before, after)
			}
		}, []string{".env", "a/b/c/d/.env", "x/y/.env.local"}, 1},
		{"root", func(f *fsys) { f.remove(".env"); f.write(".env.local") }, []string{".env.local", "x/y/.env.local"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, tree...)
			cache := filepath.Join(t.TempDir(), "cache")
			scanT(t, later(), root, defaults, cache)
			tc.op(&fsys{t: t, root: root})
			got, st := scanT(t, later(), root, defaults, cache)
			equal(t, "scan", rel(root, got), tc.want)
			equal(t, "reference", rel(root, reference(t, root, defaults)), tc.want)
			if st.reads != tc.reads {
				t.Errorf("read %d directories, want %d", st.reads, tc.reads)
			}
			if st.wrote != (tc.reads > 0) {
				t.Errorf("cache rewritten: %v, want %v", st.wrote, tc.reads > 0)
			}
		})
	}
}

// TestScanInvalidates: a cache written for another matcher or root is not used.
func TestScanInvalidates(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, "p/.env", "p/a/.env.local", "p/a/key.pem", "q/.env.x", "q/b/")
	cache := filepath.Join(t.TempDir(), "cache")
	pem := Matcher{Mask: []string{"*.pem"}}
	allow := Matcher{Mask: defaults.Mask, Allow: []string{".env.local"}}
	for _, step := range []struct {
		root  string
		m     Matcher
		want  []string
		reads int
	}{
		{"p", defaults, []string{".env", "a/.env.local"}, 2},
		{"p", defaults, []string{".env", "a/.env.local"}, 0},
		{"p", pem, []string{"a/key.pem"}, 2},
		{"p", allow, []string{".env"}, 2},
		{"q", allow, []string{".env.x"}, 2},
		{"q", allow, []string{".env.x"}, 0},
		{"p", allow, []string{".env"}, 2},
	} {
		root := filepath.Join(dir, step.root)
		got, st := scanT(t, later(), root, step.m, cache)
		equal(t, step.root+" scan", rel(root, got), step.want)
		if st.reads != step.reads {
			t.Errorf("%s %v: read %d directories, want %d", step.root, step.m, st.reads, step.reads)
		}
	}
}

func TestScanErrors(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, "file")
	for _, tc := range []struct {
		root string
		m    Matcher
		want error
	}{
		{dir + "/missing", defaults, fs.ErrNotExist},
		{dir + "/file", defaults, unix.ENOTDIR},
		{dir, Matcher{Mask: []string{"[.env"}}, path.ErrBadPattern},
		{dir, Matcher{Mask: []string{".env"}, Allow: []string{`x\`}}, path.ErrBadPattern},
	} {
		_, err := Scan(tc.root, tc.m, filepath.Join(t.TempDir(), "cache"))
		if !errors.Is(err, tc.want) {
			t.Errorf("Scan(%s, %v): %v, want %v", tc.root, tc.m, err, tc.want)
		}
	}
	// Nothing to mask: nothing is read, not even the root.
	if got, err := Scan(dir+"/missing", Matcher{Skip: []string{".git"}}, ""); err != nil || got != nil {
		t.Errorf("no mask globs: %v, %v", got, err)
	}
}

// TestScanUnreadable: a directory that cannot be listed is skipped, except for the
// literal mask names, which a sandboxed process can open in a searchable one.
// TestScanUnreadable: a directory of the scanning user that the user cannot list
// fails the scan (the sandbox runs as that user and could chmod it open, so it cannot
// be trusted to hold nothing to mask); once readable again, it is scanned.
func TestScanUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("permissions do not apply to root")
	}
	root := t.TempDir()
	build(t, root, "closed/.env", "closed/sub/.env", "search/.env", "open/.env")
	chmod := func(p string, mode os.FileMode) {
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(t.TempDir(), "cache")
	for _, dir := range []string{"closed", "search"} {
		chmod(dir, map[string]os.FileMode{"closed": 0, "search": 0o111}[dir])
		if _, err := Scan(root, Matcher{Mask: []string{".env"}}, cache); !errors.Is(err, ErrOwnUnreadable) {
			t.Errorf("%s unreadable: %v, want ErrOwnUnreadable", dir, err)
		}
		chmod(dir, 0o755)
	}
	got, _ := scanT(t, later(), root, defaults, cache)
	equal(t, "scan after chmod", rel(root, got), []string{"closed/.env", "closed/sub/.env", "open/.env", "search/.env"})
}

func TestScanWorkers(t *testing.T) {
	root := t.TempDir()
	var tree []string
	for i := range 120 { // wider than a chunk, more tasks than the queue holds
		tree = append(tree, filepath.Join("wide", string(rune('a'+i%26))+string(rune('a'+i/26)), "deep", ".env"))
	}
	build(t, root, tree...)
	want := reference(t, root, defaults)
	for _, workers := range []int{1, 2, 8} {
		s := later()
		s.workers = workers
		cache := filepath.Join(t.TempDir(), "cache")
		for range 2 {
			got, _ := scanT(t, s, root, defaults, cache)
			if !slices.Equal(got, want) {
				t.Errorf("%d workers: %d matches, want %d", workers, len(got), len(want))
			}
		}
	}
}
