package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// A listed directory answers absence below it without asking; every name it holds is
// still asked (a symlink planted there is seen as one), and so is every path outside
// it.
func TestStatCacheListingAnswersAbsenceOnly(t *testing.T) {
	dir := t.TempDir()
	listed := filepath.Join(dir, "home")
	mkdirs(t, listed+"/.config")
	writeFile(t, listed+"/.bashrc", "")
	symlink(t, "/etc/passwd", listed+"/.gitconfig")
	asked := map[string]int{}
	count := func(op string, fn func(string) (fs.FileInfo, error)) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) { asked[op+" "+p]++; return fn(p) }
	}
	lists := 0
	c := newStatCache(count("lstat", os.Lstat), count("stat", os.Stat))
	c.listDirs(func(d string) (map[string]struct{}, error) { lists++; return listNames(d) }, listed)
	for _, rel := range []string{"home/.aws", "home/.aws/config", "home/.config/fish", "home/.bashrc", "home/.gitconfig", "home/.config", "elsewhere", "home"} {
		p := filepath.Join(dir, rel)
		lfi, lerr := c.Lstat(p)
		sfi, serr := c.Stat(p)
		wl, wlerr := os.Lstat(p)
		ws, wserr := os.Stat(p)
		if errors.Is(lerr, fs.ErrNotExist) != errors.Is(wlerr, fs.ErrNotExist) || errors.Is(serr, fs.ErrNotExist) != errors.Is(wserr, fs.ErrNotExist) ||
			(lerr == nil) != (wlerr == nil) || (serr == nil) != (wserr == nil) {
			t.Fatalf("%s: errors %v/%v, want %v/%v", rel, lerr, serr, wlerr, wserr)
		}
		if lerr == nil && lfi.Mode() != wl.Mode() || serr == nil && sfi.Mode() != ws.Mode() {
			t.Errorf("%s: modes %v/%v, want %v/%v", rel, lfi.Mode(), sfi.Mode(), wl.Mode(), ws.Mode())
		}
	}
	if lists != 1 {
		t.Errorf("listed %d times, want once", lists)
	}
	for _, rel := range []string{"home/.aws", "home/.aws/config"} {
		if n := asked["lstat "+filepath.Join(dir, rel)] + asked["stat "+filepath.Join(dir, rel)]; n != 0 {
			t.Errorf("%s is absent from the listing, yet asked %d times", rel, n)
		}
	}
	for _, q := range []string{"lstat home/.bashrc", "lstat home/.gitconfig", "stat home/.gitconfig", "lstat home/.config", "lstat home/.config/fish", "lstat elsewhere", "lstat home"} {
		op, rel, _ := strings.Cut(q, " ")
		if asked[op+" "+filepath.Join(dir, rel)] != 1 {
			t.Errorf("%s: asked %d times, want once (a listed name is checked as before)", q, asked[op+" "+filepath.Join(dir, rel)])
		}
	}
}

// A directory that cannot be listed, or is too large to list cheaply, is asked about
// path by path.
func TestStatCacheUnlistedDirectory(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	mkdirs(t, big)
	for i := 0; i <= listedMax; i++ {
		writeFile(t, fmt.Sprintf("%s/f%04d", big, i), "")
	}
	if names, _ := listNames(big); names != nil {
		t.Fatalf("a directory of %d names was listed", listedMax+1)
	}
	if names, _ := listNames(filepath.Join(dir, "missing")); names != nil {
		t.Fatal("a missing directory was listed")
	}
	asked := 0
	c := newStatCache(func(p string) (fs.FileInfo, error) { asked++; return os.Lstat(p) }, os.Stat)
	c.listDirs(listNames, big, filepath.Join(dir, "missing"))
	for _, p := range []string{big + "/absent", big + "/f0001", dir + "/missing/x"} {
		c.Lstat(p)
	}
	if asked != 3 {
		t.Errorf("asked %d paths, want all 3", asked)
	}
}

// TestStatCacheConcurrent: the head's goroutine and Build ask through one cache at
// once; every caller of a path gets the answer the cache keeps, and each path is
// asked of the host at most once per goroutine racing for it.
func TestStatCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprint(i))
		if i%2 == 0 {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, p)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	count := func(f func(string) (fs.FileInfo, error)) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) {
			mu.Lock()
			asked[p]++
			mu.Unlock()
			return f(p)
		}
	}
	c := newStatCache(count(os.Lstat), count(os.Stat))
	c.listDirs(listNames, dir)
	const workers = 4
	got := make([][]fs.FileInfo, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range paths {
				fi, _ := c.Lstat(p)
				if sfi, _ := c.Stat(p); sfi != fi {
					t.Errorf("%s: Stat %v after Lstat %v", p, sfi, fi)
				}
				got[w] = append(got[w], fi)
			}
		}()
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		for i := range paths {
			if got[w][i] != got[0][i] {
				t.Errorf("%s: goroutines got different answers", paths[i])
			}
		}
	}
	for i, p := range paths {
		if (got[0][i] != nil) != (i%2 == 0) {
			t.Errorf("%s: found %v", p, got[0][i] != nil)
		}
		if asked[p] > workers || i%2 == 1 && asked[p] > 0 {
			t.Errorf("%s asked of the host %d times", p, asked[p])
		}
	}
}

// lstats is how many Lstat answers c keeps.
func (c *statCache) lstats() int {
	n := 0
	c.l.Range(func(any, any) bool { n++; return true })
	return n
}

// TestStatCacheListingHoldsNoOne: while one goroutine lists a directory (held here in
// its readNames), the other's questions are answered, about a path already asked and
// a new one elsewhere: nothing holds the cache across a host call, so the view ahead
// and Build never wait on each other's system calls.
func TestStatCacheListingHoldsNoOne(t *testing.T) {
	dir := t.TempDir()
	listed, other := filepath.Join(dir, "home"), filepath.Join(dir, "other")
	mkdirs(t, listed, other)
	c := newStatCache(os.Lstat, os.Stat)
	if _, err := c.Lstat(other); err != nil {
		t.Fatal(err)
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	c.listDirs(func(d string) (map[string]struct{}, error) {
		close(entered)
		<-gate
		return listNames(d)
	}, listed)
	lister := make(chan error, 1)
	go func() {
		_, err := c.Lstat(listed + "/.absent")
		lister <- err
	}()
	<-entered
	asker := make(chan error, 1)
	go func() {
		if _, err := c.Lstat(other); err != nil {
			asker <- err
			return
		}
		_, err := c.Stat(other + "/new")
		asker <- err
	}()
	select {
	case err := <-asker:
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("asked while a listing was held: %v, want not exist", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a question elsewhere waited for another goroutine's listing")
	}
	close(gate)
	if err := <-lister; !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("below the listed directory: %v, want not exist", err)
	}
}

func TestParent(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/home/u/.config/x", "/a/b/c/d"} {
		if got, want := parent(p), filepath.Dir(p); got != want {
			t.Errorf("parent(%q) = %q, want %q (filepath.Dir)", p, got, want)
		}
	}
}
