package maskscan

import (
	"io/fs"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestScanRandom changes a tree at random, the way a user would, and checks every
// scan with the cache, and the portable walk, against the reference walk.
func TestScanRandom(t *testing.T) {
	m := Matcher{Mask: defaults.Mask, Allow: []string{".env.example"}, Skip: defaults.Skip, Mark: []string{".git"}}
	files := []string{".env", ".env.local", ".env.example", "main.go", "env", ".envrc", ".git"}
	dirs := []string{"a", "b", "src", "node_modules", ".git", ".env.d"}
	for seed := range uint64(3) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			root, outside := t.TempDir(), filepath.Join(t.TempDir(), "secret")
			f := &fsys{t: t, root: root}
			cache := filepath.Join(t.TempDir(), "cache")
			pick := func(l []string) string { return l[rng.IntN(len(l))] }
			for step := range 200 {
				ds, es := entries(t, root)
				var did string
				switch op := rng.IntN(12); {
				case op < 4:
					p := path.Join(pick(ds), pick(files))
					if !slices.Contains(ds, p) && !slices.Contains(es, p) { // never through a symlink
						did = "write " + p
						f.write(p)
					}
				case op < 7:
					p := path.Join(pick(ds), pick(dirs))
					if !slices.Contains(ds, p) && !slices.Contains(es, p) {
						did = "mkdir " + p
						f.mkdir(p)
					}
				case op == 7 && len(es) > 0:
					p := pick(es)
					did = "remove " + p
					f.remove(p)
				case op == 8 && len(ds) > 8: // a tree worth scanning stays
					p := pick(ds[1:])
					did = "remove " + p
					f.remove(p)
				case op == 9 && len(es) > 0:
					from, to := pick(es), path.Join(pick(ds), pick(files))
					if !slices.Contains(ds, to) {
						did = "rename " + from + " " + to
						f.rename(from, to)
					}
				case op == 10 && len(ds) > 1:
					from, to := pick(ds[1:]), path.Join(pick(ds), pick(dirs))
					if !strings.HasPrefix(to+"/", from+"/") && !slices.Contains(ds, to) && !slices.Contains(es, to) {
						did = "rename " + from + " " + to
						f.rename(from, to)
					}
				case op == 11:
					p := path.Join(pick(ds), pick(files))
					if !slices.Contains(ds, p) && !slices.Contains(es, p) {
						did = "symlink " + p
						f.symlink(pick([]string{"..", "missing", outside}), p)
					}
				}
				s := later()
				s.workers = 1 + rng.IntN(3)
				if rng.IntN(10) == 0 {
					s.now = time.Now // every directory is racy, and a cache written now says so
				}
				got, _ := scanT(t, s, root, m, cache)
				want := reference(t, root, m)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d, after %s:\n got  %q\n want %q", step, did, rel(root, got), rel(root, want))
				}
				if got, err := readDirT(root, m); err != nil || !slices.Equal(got, want) {
					t.Fatalf("step %d, after %s: portable walk %q (%v), want %q", step, did, rel(root, got), err, rel(root, want))
				}
			}
		})
	}
}

// entries lists the directories ("." first) and the other entries below root.
func entries(t *testing.T, root string) (dirs, others []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if d.IsDir() {
			dirs = append(dirs, r)
		} else {
			others = append(others, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs, others
}
