package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
)

// baselineEntry records a .git entry below the project as the host left it.
func (w *Watcher) baselineEntry(path string) *nestedEntry {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	e := &nestedEntry{st: stampOf(fi)}
	switch {
	case fi.IsDir():
		e.dir = w.c.snapshot(path, plain)
	case fi.Mode().IsRegular():
		e.file, _ = readFile(path, maxMeta)
	}
	return e
}

// checkNested checks a known .git entry; gone reports that it is no more.
func (w *Watcher) checkNested(path string, e *nestedEntry) (probs []problem, gone bool) {
	if w.c.isReadOnly(path) {
		return nil, false // only the host can change it
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, true
	}
	if w.linked(path) {
		// A directory on the way is now a symlink: what lies behind it is not the
		// project's, and git on the host does not enter a submodule through one.
		// Checked again once the directory is back.
		return nil, false
	}
	switch {
	case e.dir != nil && fi.IsDir():
		return w.c.check(e.dir), false
	case e.dir == nil && fi.Mode().IsRegular():
		st := stampOf(fi)
		if st == e.st {
			return nil, false
		}
		b, err := readFile(path, maxMeta)
		if err != nil {
			return []problem{{path: path, why: "it cannot be read: " + err.Error(), restore: e.file}}, false
		}
		if bytes.Equal(b, e.file) {
			e.st = st
			return nil, false
		}
		if why := w.gitfileProblem(path, b); why != "" {
			return []problem{{path: path, why: why, restore: e.file}}, false
		}
		e.file, e.st = b, st
		return nil, false
	}
	return nil, true // replaced by another kind of file: checked as new
}

// checkNew checks a .git entry that appeared below the project during the run; one
// that passes is watched from then on.
func (w *Watcher) checkNew(path string) []problem {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	switch {
	case fi.IsDir():
		g := newGitDir(path, plain)
		if probs := w.c.check(g); len(probs) > 0 {
			return []problem{{path: path, why: "a new repository, in which " + firstWhy(probs, path) + "; git on the host would use it in " + filepath.Dir(path)}}
		}
		w.nested[path] = &nestedEntry{dir: g, st: stampOf(fi)}
		return nil
	case fi.Mode().IsRegular():
		b, err := readFile(path, maxMeta)
		if err != nil {
			return []problem{{path: path, why: "git on the host would read it, and it cannot be checked: " + err.Error()}}
		}
		if why := w.gitfileProblem(path, b); why != "" {
			return []problem{{path: path, why: why}}
		}
		w.nested[path] = &nestedEntry{file: b, st: stampOf(fi)}
		return nil
	}
	return []problem{{path: path, why: "git on the host would follow it to a repository of the sandbox's choosing"}}
}

// gitfileProblem checks a gitdir file (a linked worktree's or a submodule's .git): the
// git dir it names must lie in the project, and be one the watch checks (a
// repository's own git dirs are; any other is checked now, and watched from then on).
// It returns why not, "" when it passes.
func (w *Watcher) gitfileProblem(path string, b []byte) string {
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return "" // git refuses such a file: nothing to follow
	}
	t := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(path), t)
	}
	real, err := filepath.EvalSymlinks(t)
	if err != nil {
		real = filepath.Clean(t)
	}
	if !isolator.Within(real, w.p.Project.Dir) {
		return "it points git on the host to " + real + ", a git dir outside the project that the sandbox may have written"
	}
	if w.watched(real) {
		return ""
	}
	if _, err := os.Lstat(filepath.Join(real, "HEAD")); err != nil {
		return "" // not a git dir: git refuses it
	}
	g := newGitDir(real, plain)
	if probs := w.c.check(g); len(probs) > 0 {
		return "it points git on the host to " + real + ", in which " + firstWhy(probs, real)
	}
	w.dirs = append(w.dirs, g)
	return ""
}

// watched reports whether the git dir p is, or lies in, one the watch checks.
func (w *Watcher) watched(p string) bool {
	for _, g := range w.dirs {
		if isolator.Within(p, g.path) {
			return true
		}
	}
	for path, e := range w.nested {
		if e.dir != nil && isolator.Within(p, path) {
			return true
		}
	}
	return false
}

// gitlinks returns the .git entries of the project's submodules (its index's
// gitlinks) when the index changed: the host's git status enters each of them. A
// split index's shared index counts as part of it: its gitlinks are git's too, and
// a change to it (the sandbox may rewrite one in place, git does not check its hash)
// is a change of the index. An index or shared index git would read and the watch
// cannot (a symlink, a FIFO, a file over maxIndex, a split index whose replacing
// entries it cannot place) is moved aside: the host's git then has none, and fails
// or starts from HEAD, rather than entering submodules nobody checked.
//
// The index is read as a stream, holding a path at a time, and, but for the last
// check (final), at most once every 20 times its last read's duration: the sandbox
// may write one of maxIndex bytes and touch it at every check, and the watch runs
// outside every limit the sandbox has.
func (w *Watcher) gitlinks(final bool) []string {
	idx := w.p.Git.Index
	if idx == "" {
		return nil
	}
	fi, err := os.Lstat(idx)
	if err != nil {
		return nil
	}
	st, shared, changed := stampOf(fi), map[string]stamp{}, stampOf(fi) != w.index
	for sp, old := range w.shared {
		shared[sp] = lstamp(sp)
		changed = changed || shared[sp] != old
	}
	if !changed || !final && time.Since(w.indexRead) < 20*w.indexCost {
		return nil // unchanged, or read again later: the stamps stay as they were
	}
	w.index, w.shared = st, shared
	start := time.Now()
	defer func() { w.indexRead, w.indexCost = time.Now(), time.Since(start) }()
	hashLen := w.hashLen()
	ix, ok := w.readIndexFile(idx, hashLen, mainEntry)
	if !ok {
		return nil
	}
	links := ix.gitlinks()
	// Only the shared index this index names is git's: a change to another one
	// matters once an index names it, a change of the index itself.
	w.shared = map[string]stamp{}
	if ix.shared != "" {
		sp := filepath.Join(filepath.Dir(idx), "sharedindex."+ix.shared)
		w.shared[sp] = lstamp(sp)
		replaced, known := ix.replacedGitlinks()
		if !known {
			w.handle([]problem{{path: idx, why: "it replaces entries of its shared index with submodules, and devsandbox cannot tell which (its replace bitmap is missing or unreadable); without it git starts from HEAD (`git reset` rebuilds the index)"}})
			return nil
		}
		want := map[int]bool{}
		for _, p := range replaced {
			want[p] = true
		}
		if sh, ok := w.readIndexFile(sp, hashLen, func(gitlink bool, pos int) bool { return gitlink || want[pos] }); ok {
			links = append(links, splitGitlinks(sh, replaced)...)
		}
	}
	slices.Sort(links)
	var out []string
	for _, l := range slices.Compact(links) {
		p := filepath.Join(w.p.Project.Dir, filepath.FromSlash(l), ".git")
		if !cleanGitlink(l) || !isolator.Within(p, w.p.Project.Dir) {
			// git refuses such a path in an index (verify_path): the sandbox wrote
			// it to point the watch at a repository outside the project.
			if msg := fmt.Sprintf("the sandbox wrote a submodule path git refuses (%q) into %s; devsandbox does not follow it. Run `git status` there: git reports the index as corrupt or the path as invalid", l, idx); !w.said[msg] {
				w.said[msg] = true
				w.warn(msg)
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// readIndexFile reads the index or shared index p (readIndex, keeping what keep
// chooses); one that is not there is not read (ok false, nothing said), one git
// would read and the watch cannot open as a regular file of at most maxIndex bytes
// is moved aside. One it cannot parse is left: git refuses it too.
func (w *Watcher) readIndexFile(p string, hashLen int, keep keepFunc) (ix *gitIndex, ok bool) {
	f, size, err := openRegular(p, maxIndex)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case err != nil:
		w.handle([]problem{{path: p, why: fmt.Sprintf("git on the host would read the submodules it enters from it, and devsandbox cannot check it (%v); without it git starts from HEAD (`git reset` rebuilds the index)", err)}})
		return nil, false
	}
	defer f.Close()
	ix, err = readIndex(f, size, hashLen, keep)
	return ix, err == nil
}

// sharedIndexes returns the split index files (sharedindex.*) in the git dir holding
// the index idx, with their stamps: the baseline of those a later index may name.
func sharedIndexes(idx string) map[string]stamp {
	out := map[string]stamp{}
	if idx == "" {
		return out
	}
	ents, _ := os.ReadDir(filepath.Dir(idx)) // none when it cannot be read
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "sharedindex.") {
			p := filepath.Join(filepath.Dir(idx), e.Name())
			out[p] = lstamp(p)
		}
	}
	return out
}

// lstamp is the stamp of p itself (a symlink's own), the zero stamp when it is
// not there.
func lstamp(p string) stamp {
	if fi, err := os.Lstat(p); err == nil {
		return stampOf(fi)
	}
	return stamp{}
}

// cleanGitlink reports whether l is a path git accepts in an index: relative, with
// no empty, ".", ".." or ".git" component.
func cleanGitlink(l string) bool {
	if l == "" || strings.HasPrefix(l, "/") {
		return false
	}
	for _, c := range strings.Split(l, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// hashLen is the object id length of the project's repository (its config's
// extensions.objectformat).
func (w *Watcher) hashLen() int {
	for _, g := range w.dirs {
		for _, v := range gitconfig.Values(g.configs["config"], "extensions.objectformat") {
			if strings.EqualFold(v, "sha256") {
				return 32
			}
		}
	}
	return 20
}
