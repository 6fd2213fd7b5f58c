package watch

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
)

// kind is what a git dir is to the project; it decides which pointer files it may
// hold.
type kind int

const (
	plain  kind = iota // a repository's own git dir: no commondir, no gitdir
	admin              // a linked worktree's git dir (<common>/worktrees/<name>)
	module             // a submodule's git dir (<git dir>/modules/<name>)
)

// stamp tells whether a file changed: a write in place changes the times, a
// replacement the inode.
type stamp struct {
	ino, size    uint64
	mtime, ctime int64
	mode         fs.FileMode
}

func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino, s.ctime = uint64(st.Ino), ctime(st)
	}
	return s
}

// gitDir is what the host's git reads from one git dir, as it was when last found
// safe: its pointer and config files, its hooks, and the git dirs below it.
type gitDir struct {
	path      string
	kind      kind
	files     map[string]stamp             // config, config.worktree, commondir, gitdir
	configs   map[string][]gitconfig.Entry // the variables of config and config.worktree
	raw       map[string][]byte            // their content, to put back
	hooks     map[string]stamp             // hooks/<name>
	modules   map[string]*gitDir           // submodules' git dirs, by path below modules/
	worktrees map[string]*gitDir           // linked worktrees' git dirs, by name
}

// metaFiles are the files of a git dir the host's git follows or obeys.
var metaFiles = []string{"config", "config.worktree", "commondir", "gitdir"}

// problem is one thing in a git dir the host's git must not see.
type problem struct {
	path string // what to quarantine
	why  string
	// restore is the content to put back at path (a config file as it was), nil
	// when there is nothing to restore.
	restore []byte
}

// checker checks git dirs of one project.
type checker struct {
	project string
	// readOnly are paths the sandbox cannot change (read-only mounts), with the inode
	// each had at launch: only the host can change them, and its changes are its
	// own. One that is no longer there (its directory renamed away, a new one made
	// in its place) is checked like any other.
	readOnly map[string]uint64
	// pin returns a path through which the git dir p is read for one check: on
	// Linux a descriptor's (/proc/self/fd/N) opened from p's root without following
	// a symlink, so that a directory on the way swapped for a link while the check
	// reads does not make it read (and later put back) another repository's files;
	// ok is false when p cannot be reached so. nil: p itself.
	pin func(p string) (dir string, release func(), ok bool)
}

// at returns the path the check of git dir p reads through (see pin).
func (c *checker) at(p string) (string, func(), bool) {
	if c.pin == nil {
		return p, func() {}, true
	}
	return c.pin(p)
}

func (c *checker) isReadOnly(p string) bool {
	for r, ino := range c.readOnly {
		if isolator.Within(p, r) {
			if fi, err := os.Lstat(r); err == nil && stampOf(fi).ino == ino {
				return true
			}
		}
	}
	return false
}

// config returns the checker of a config file of the git dir dir.
func (c *checker) config(dir string) gitconfig.Checker {
	return gitconfig.Checker{Worktree: func(v string) bool {
		if !filepath.IsAbs(v) {
			v = filepath.Join(dir, v)
		}
		return isolator.Within(filepath.Clean(v), c.project)
	}}
}

// check compares the git dir g with the state it was found safe in, records what is
// safe as the new state, and returns the problems. A git dir not known before (an
// empty g) is checked in full: everything in it is new.
func (c *checker) check(g *gitDir) []problem {
	dir, release, ok := c.at(g.path)
	if !ok {
		return nil // gone, or behind a symlink git does not follow either
	}
	defer release()
	var out []problem
	for _, name := range metaFiles {
		p := filepath.Join(g.path, name)
		if c.isReadOnly(p) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			delete(g.files, name)
			continue
		}
		st := stampOf(fi)
		if old, ok := g.files[name]; ok && old == st {
			continue
		}
		if pr, ok := c.checkFile(g, dir, name, fi); !ok {
			pr.path = p
			out = append(out, pr)
			continue
		}
		g.files[name] = st
	}
	out = append(out, c.checkHooks(g, dir)...)
	out = append(out, c.checkBelow(g, dir, "modules", g.modules)...)
	out = append(out, c.checkBelow(g, dir, "worktrees", g.worktrees)...)
	return out
}

// checkFile checks one changed or new meta file of g, read through dir (at); on
// success it records what it read.
func (c *checker) checkFile(g *gitDir, dir, name string, fi fs.FileInfo) (problem, bool) {
	if !fi.Mode().IsRegular() {
		return problem{why: "it is not a regular file", restore: g.raw[name]}, false
	}
	b, err := readFile(filepath.Join(dir, name), maxMeta)
	if err != nil {
		return problem{why: "it cannot be read: " + err.Error(), restore: g.raw[name]}, false
	}
	switch name {
	case "config", "config.worktree":
		es, err := gitconfig.Parse(b)
		if err != nil {
			return problem{why: "git would read it, and it is not a config file devsandbox can check: " + err.Error(), restore: g.raw[name]}, false
		}
		if bad := c.config(g.path).Unsafe(g.configs[name], es); len(bad) > 0 {
			return problem{why: "it sets " + describe(bad) + ", which the host's git would obey", restore: g.raw[name]}, false
		}
		g.configs[name], g.raw[name] = es, b
		return problem{}, true
	case "commondir":
		if g.kind == admin && (strings.TrimSpace(string(b)) == "../.." || bytes.Equal(b, g.raw[name])) {
			g.raw[name] = b // what git worktree add writes
			return problem{}, true
		}
		return problem{why: "git would take its config and hooks from where it points (" + strings.TrimSpace(string(b)) + ")", restore: g.raw[name]}, false
	case "gitdir":
		t := strings.TrimSpace(string(b))
		if !filepath.IsAbs(t) {
			t = filepath.Join(g.path, t)
		}
		if g.kind == admin && (bytes.Equal(b, g.raw[name]) || isolator.Within(filepath.Clean(t), c.project)) {
			g.raw[name] = b
			return problem{}, true
		}
		return problem{why: "git would take the work tree it names (" + strings.TrimSpace(string(b)) + ")", restore: g.raw[name]}, false
	}
	return problem{}, true
}

// checkHooks reports every hook that is new or changed, other than git's samples.
func (c *checker) checkHooks(g *gitDir, at string) []problem {
	dir := filepath.Join(g.path, "hooks")
	if c.isReadOnly(dir) {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(at, "hooks"))
	if err != nil {
		return nil
	}
	var out []problem
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(filepath.Join(at, "hooks", e.Name()))
		if err != nil {
			continue
		}
		st := stampOf(fi)
		if old, ok := g.hooks[e.Name()]; ok && old == st {
			continue
		}
		if strings.HasSuffix(e.Name(), ".sample") && fi.Mode().IsRegular() {
			g.hooks[e.Name()] = st // git's samples are never run
			continue
		}
		out = append(out, problem{path: p, why: "git on the host would run it"})
	}
	return out
}

// checkBelow checks the git dirs below g's modules/ or worktrees/: the known ones file
// by file, a new one as a whole (on any problem, the whole directory is the problem).
func (c *checker) checkBelow(g *gitDir, at, sub string, known map[string]*gitDir) []problem {
	found := findGitDirs(filepath.Join(at, sub), sub == "modules")
	var out []problem
	for rel := range known {
		if _, ok := found[rel]; !ok {
			delete(known, rel)
		}
	}
	for rel := range found {
		p := filepath.Join(g.path, sub, rel) // the real path: found's lie below at
		if k, ok := known[rel]; ok {
			out = append(out, c.check(k)...)
			continue
		}
		k := newGitDir(p, map[string]kind{"modules": module, "worktrees": admin}[sub])
		if probs := c.check(k); len(probs) > 0 {
			out = append(out, problem{path: p, why: "a new git dir, in which " + firstWhy(probs, p)})
			continue
		}
		known[rel] = k
	}
	return out
}

func firstWhy(probs []problem, dir string) string {
	rel, _ := filepath.Rel(dir, probs[0].path)
	return rel + ": " + probs[0].why
}

// findGitDirs returns the git dirs (directories holding HEAD) below dir by their path
// relative to it; with deep, names with slashes are followed (submodules are named
// by path), not into a git dir found.
func findGitDirs(dir string, deep bool) map[string]string {
	out := map[string]string{}
	var walk func(d, rel string, depth int)
	walk = func(d, rel string, depth int) {
		ents, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			p, r := filepath.Join(d, e.Name()), filepath.Join(rel, e.Name())
			if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
				out[r] = p
				continue
			}
			if deep && depth < 8 {
				walk(p, r, depth+1)
			}
		}
	}
	walk(dir, "", 0)
	return out
}

func newGitDir(path string, k kind) *gitDir {
	return &gitDir{path: path, kind: k, files: map[string]stamp{}, configs: map[string][]gitconfig.Entry{},
		raw: map[string][]byte{}, hooks: map[string]stamp{}, modules: map[string]*gitDir{}, worktrees: map[string]*gitDir{}}
}

// snapshot records a git dir as it is: the baseline of a run, trusted as the host's.
func (c *checker) snapshot(path string, k kind) *gitDir {
	g := newGitDir(path, k)
	at, release, ok := c.at(path)
	if !ok {
		return g
	}
	defer release()
	for _, name := range metaFiles {
		p := filepath.Join(at, name)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		g.files[name] = stampOf(fi)
		if b, err := readFile(p, maxMeta); err == nil {
			g.raw[name] = b
			if name == "config" || name == "config.worktree" {
				// The host's own config may hold anything; what matters is what
				// changes. Unreadable by the parser: every variable of a new version
				// must then be safe on its own.
				g.configs[name], _ = gitconfig.Parse(b)
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(at, "hooks")); err == nil {
		for _, e := range ents {
			if fi, err := os.Lstat(filepath.Join(at, "hooks", e.Name())); err == nil {
				g.hooks[e.Name()] = stampOf(fi)
			}
		}
	}
	for rel := range findGitDirs(filepath.Join(at, "modules"), true) {
		g.modules[rel] = c.snapshot(filepath.Join(path, "modules", rel), module)
	}
	for rel := range findGitDirs(filepath.Join(at, "worktrees"), false) {
		g.worktrees[rel] = c.snapshot(filepath.Join(path, "worktrees", rel), admin)
	}
	return g
}

// describe names the variables of es for a message.
func describe(es []gitconfig.Entry) string {
	var names []string
	for _, e := range es {
		names = append(names, e.Key())
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return strings.Join(names, ", ")
}
