package maskscan

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var defaults = Matcher{Mask: []string{".env", ".env.*"}, Skip: []string{".git", "node_modules"}}

// reference is the obvious full walk, written independently of Scan, with os.ReadDir.
func reference(t testing.TB, root string, m Matcher) []Match {
	t.Helper()
	matches := func(globs []string, name string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { ok, _ := path.Match(g, name); return ok })
	}
	out := []Match{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if dir == root {
				t.Fatalf("reference walk: %v", err)
			}
			return
		}
		for _, e := range ents {
			p := dir + "/" + e.Name()
			switch {
			case e.IsDir():
				if matches(m.Mark, e.Name()) {
					out = append(out, Match{Path: p, Masked: matches(m.Mask, e.Name()) && !matches(m.Allow, e.Name()), Marked: true})
				}
				if !slices.Contains(m.Skip, e.Name()) {
					walk(p)
				}
			case matches(m.Mask, e.Name()) && !matches(m.Allow, e.Name()) || matches(m.Mark, e.Name()):
				out = append(out, Match{Path: p, Symlink: e.Type()&os.ModeSymlink != 0,
					Masked: matches(m.Mask, e.Name()) && !matches(m.Allow, e.Name()), Marked: matches(m.Mark, e.Name())})
			}
		}
	}
	walk(root)
	slices.SortFunc(out, func(a, b Match) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// later is a scanner whose clock runs an hour ahead: every directory the test
// made is old enough for the cache to be trusted with it, so scans reuse it.
func later() scanner {
	return scanner{now: func() time.Time { return time.Now().Add(time.Hour) }, workers: 2}
}

// scanT runs s and fails t on an error.
func scanT(t *testing.T, s scanner, root string, m Matcher, cacheFile string) ([]Match, stats) {
	t.Helper()
	got, st, err := s.scan(root, m, cacheFile)
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return got, st
}

// rel turns matches below root into relative paths, "@" appended to a symlink's.
func rel(root string, ms []Match) []string {
	out := []string{}
	for _, m := range ms {
		p := strings.TrimPrefix(m.Path, root+"/")
		if m.Symlink {
			p += "@"
		}
		out = append(out, p)
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// build creates paths below root: "d/" a directory, "l -> target" a symlink, any
// other a file; parents are created as needed.
func build(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		var err error
		full := filepath.Join(root, strings.Fields(p)[0])
		if err = os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch f := strings.Fields(p); {
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		case len(f) == 3 && f[1] == "->":
			err = os.Symlink(f[2], full)
		default:
			err = os.WriteFile(full, []byte("TOKEN=x\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
