package planner

import (
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
)

// statCache remembers the Lstat and Stat answers of one Build. The tool registry's
// detection, the mount builder's symlink checks, the tripwires and the link resolution
// ask about the same paths (the home's configuration directories, the project's agent
// files) several times each; every answer after the first comes from here. Like
// evalCache it lives for one Build, which creates nothing it later asks about, so an
// answer is never older than the Build: what the sandbox is given is still checked
// when it is opened (package pin) and watched while it runs.
//
// Most of what Build asks about does not exist (the dozens of tools' configuration
// files in the home, commands in PATH, the agent files of the project). For the few
// directories those questions crowd into (listDirs: the home, its configuration and
// data directories, PATH, the project), the directory is read once and a name it
// does not hold answers "does not exist" for every path below it without a system
// call. A listing only ever answers absence: a
// name it holds is still asked with lstat(2) or stat(2), so what is found is checked
// exactly as before.
//
// The system view worked out ahead (StartSystem) asks through the same cache on its
// own goroutine while Build asks on the caller's, so every method locks mu; a path is
// asked of the host once, whichever goroutine asks first.
type statCache struct {
	mu          sync.Mutex
	lstat, stat func(string) (fs.FileInfo, error)
	l, s        map[string]statResult

	// readNames lists a directory (nil: no listings); listable are the directories
	// it may list, listed what it returned (nil: unusable, ask instead).
	readNames func(dir string) (map[string]struct{}, error)
	listable  map[string]bool
	listed    map[string]map[string]struct{}
}

type statResult struct {
	fi  fs.FileInfo
	err error
}

func newStatCache(lstat, stat func(string) (fs.FileInfo, error)) *statCache {
	return &statCache{lstat: lstat, stat: stat, l: map[string]statResult{}, s: map[string]statResult{},
		listable: map[string]bool{}, listed: map[string]map[string]struct{}{}}
}

// listDirs lets the cache answer absence below dirs from one listing of each (read
// when first needed), with readNames.
func (c *statCache) listDirs(readNames func(string) (map[string]struct{}, error), dirs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readNames = readNames
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			c.listable[filepath.Clean(d)] = true
		}
	}
}

// absent reports whether p is below a listable directory whose listing lacks the
// name p goes through: then p does not exist, followed or not.
func (c *statCache) absent(p string) bool {
	if c.readNames == nil || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return false
	}
	for child, dir := p, filepath.Dir(p); child != dir; child, dir = dir, filepath.Dir(dir) {
		if !c.listable[dir] {
			continue
		}
		names, ok := c.listed[dir]
		if !ok {
			if fi, err := c.statLocked(dir); err == nil && fi.IsDir() && fi.Size() <= listedMaxSize {
				names, _ = c.readNames(dir)
			}
			if names == nil {
				c.listable[dir] = false // unreadable or too large: ask
			}
			c.listed[dir] = names
		}
		if names == nil {
			return false
		}
		_, found := names[filepath.Base(child)]
		return !found
	}
	return false
}

// notExist is the error lstat(2) or stat(2) returns for a missing p.
func notExist(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: syscall.ENOENT}
}

// Lstat is lstat(2), remembered.
func (c *statCache) Lstat(p string) (fs.FileInfo, error) {
	c.mu.Lock()
	if r, ok := c.l[p]; ok {
		c.mu.Unlock()
		return r.fi, r.err
	}
	absent := c.absent(p)
	c.mu.Unlock()
	var fi fs.FileInfo
	var err error
	if absent {
		err = notExist("lstat", p)
	} else {
		fi, err = c.lstat(p) // not under mu: the other goroutine's calls go on meanwhile
	}
	return c.keep(c.l, p, statResult{fi, err})
}

// Stat is stat(2), remembered; a path Lstat found and that is no symlink is its own
// answer.
func (c *statCache) Stat(p string) (fs.FileInfo, error) {
	c.mu.Lock()
	if r, ok := c.lookStat(p); ok {
		c.mu.Unlock()
		return r.fi, r.err
	}
	absent := c.absent(p)
	c.mu.Unlock()
	var fi fs.FileInfo
	var err error
	if absent {
		err = notExist("stat", p)
	} else {
		fi, err = c.stat(p)
	}
	return c.keep(c.s, p, statResult{fi, err})
}

// lookStat is Stat's remembered answer, with mu held.
func (c *statCache) lookStat(p string) (statResult, bool) {
	if r, ok := c.s[p]; ok {
		return r, true
	}
	if r, ok := c.l[p]; ok && r.err == nil && r.fi.Mode()&fs.ModeSymlink == 0 {
		return r, true
	}
	return statResult{}, false
}

// keep remembers r for p in m unless the other goroutine, asking at the same time,
// was first: every caller then sees the one answer.
func (c *statCache) keep(m map[string]statResult, p string, r statResult) (fs.FileInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := m[p]; ok {
		return first.fi, first.err
	}
	m[p] = r
	return r.fi, r.err
}

// statLocked is Stat with mu held (absent's check of a directory before listing it).
func (c *statCache) statLocked(p string) (fs.FileInfo, error) {
	if r, ok := c.lookStat(p); ok {
		return r.fi, r.err
	}
	var fi fs.FileInfo
	var err error
	if c.absent(p) {
		err = notExist("stat", p)
	} else {
		fi, err = c.stat(p)
	}
	c.s[p] = statResult{fi, err}
	return fi, err
}
