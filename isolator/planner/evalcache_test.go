package planner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEvalCacheMatchesEvalSymlinks: over a tree of every kind of link (relative,
// absolute, chained, through "..", "a/../b" through a link, dangling, looping, through
// a file), the cache answers exactly as filepath.EvalSymlinks, asked in any order and
// twice, and lstats each real path once (but a loop's, until the bound).
func TestEvalCacheMatchesEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a/b/c", "x/y", "home/u/.config"} {
		must(os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(root, "a/b/c/f"), nil, 0o644))
	links := map[string]string{
		"rel":           "a/b",
		"abs":           filepath.Join(root, "a/b/c"),
		"chain":         "rel",
		"x/up":          "../a",
		"x/upup":        "../../" + filepath.Base(root) + "/a/b",
		"x/y/mid":       "../y/../up",  // ".." after a component: the exact walk
		"x/viaLink":     "../rel/../b", // ".." after a link
		"dangling":      "nowhere/at/all",
		"loop1":         "loop2",
		"loop2":         "loop1",
		"file":          "a/b/c/f",
		"dot":           ".",
		"parent":        "..",
		"home/u/.cfg":   ".config",
		"home/u/absdot": "/" + filepath.Base(root) + "/../" + filepath.Base(root),
	}
	for l, target := range links {
		must(os.Symlink(target, filepath.Join(root, l)))
	}
	var paths []string
	for _, p := range []string{"", "a", "a/b/c/f", "rel", "rel/c", "rel/c/f", "abs/f", "chain/c", "x/up/b", "x/upup/c",
		"x/y/mid", "x/y/mid/b", "x/viaLink", "dangling", "dangling/x", "loop1", "loop1/x", "file", "file/x",
		"dot/a", "parent", "home/u/.cfg", "home/u/.cfg/missing", "home/u/.config/git", "home/u/absdot", "missing/a/b"} {
		paths = append(paths, filepath.Join(root, p))
	}
	paths = append(paths, "relative/path", "/", root+"/a/./b", root+"/a/../a")
	lstats := map[string]int{}
	c := newEvalCache(func(p string) (os.FileInfo, error) { lstats[p]++; return os.Lstat(p) }, os.Readlink, filepath.EvalSymlinks)
	for round := 0; round < 2; round++ {
		for i := range paths {
			p := paths[(i*7+round)%len(paths)] // another order each round
			want, werr := filepath.EvalSymlinks(p)
			got, gerr := c.eval(p)
			if (werr == nil) != (gerr == nil) || got != want {
				t.Errorf("eval(%q) = %q, %v; filepath.EvalSymlinks: %q, %v", p, got, gerr, want, werr)
			}
		}
	}
	for p, n := range lstats {
		if n > 1 && filepath.Base(p) != "loop1" && filepath.Base(p) != "loop2" { // a loop: until the bound
			t.Errorf("%s lstat'ed %d times", p, n)
		}
	}
}
