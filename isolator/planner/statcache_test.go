package planner

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestStatCacheAsksOnce(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	count := func(op string, fn func(string) (fs.FileInfo, error)) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) { asked[op+" "+filepath.Base(p)]++; return fn(p) }
	}
	c := newStatCache(count("lstat", os.Lstat), count("stat", os.Stat))
	for i := 0; i < 3; i++ {
		for _, n := range []string{"f", "link", "missing"} {
			p := filepath.Join(dir, n)
			lfi, lerr := c.Lstat(p)
			sfi, serr := c.Stat(p)
			wl, wlerr := os.Lstat(p)
			ws, wserr := os.Stat(p)
			if (lerr == nil) != (wlerr == nil) || (serr == nil) != (wserr == nil) {
				t.Fatalf("%s: errors %v/%v, want %v/%v", n, lerr, serr, wlerr, wserr)
			}
			if lerr == nil && lfi.Mode() != wl.Mode() || serr == nil && sfi.Mode() != ws.Mode() {
				t.Errorf("%s: modes %v/%v, want %v/%v", n, lfi.Mode(), sfi.Mode(), wl.Mode(), ws.Mode())
			}
		}
	}
	// A file Lstat found is its own Stat; a symlink's and a missing path's Stat are asked.
	want := map[string]int{"lstat f": 1, "lstat link": 1, "lstat missing": 1, "stat link": 1, "stat missing": 1}
	if len(asked) != len(want) {
		t.Errorf("asked %v, want %v", asked, want)
	}
	for k, n := range want {
		if asked[k] != n {
			t.Errorf("asked %v, want %v", asked, want)
			break
		}
	}
}
