package planner

import (
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
// own goroutine while Build asks on the caller's; a path is asked of the host once,
// whichever goroutine asks first, unless both ask it at the same moment (then the
// first answer kept is the one both return). The answers are kept in sync.Maps, whose
// reads take no lock, and nothing holds a lock across a system call: with a mutex the
// two goroutines, each on a core of its own, blocked on each other often enough that
// the wakeups cost more than the shared answers saved (issue 18: the view ahead
// 1.5 ms instead of 0.8, Build 0.4 ms longer).
type statCache struct {
	lstat, stat func(string) (fs.FileInfo, error)
	l, s        sync.Map // path → statResult, the first answer kept

	mu    sync.Mutex               // listDirs's updates of lists
	lists atomic.Pointer[listable] // nil: no listings
	// listed is what readNames returned for a directory (a nil map: unusable, ask
	// instead).
	listed sync.Map
}

// listable is the directories a statCache may list, with readNames; listDirs
// replaces it, never changes it.
type listable struct {
	readNames func(dir string) (map[string]struct{}, error)
	dirs      map[string]bool
}

type statResult struct {
	fi  fs.FileInfo
	err error
}

func newStatCache(lstat, stat func(string) (fs.FileInfo, error)) *statCache {
	return &statCache{lstat: lstat, stat: stat}
}

// listDirs lets the cache answer absence below dirs from one listing of each (read
// when first needed), with readNames.
func (c *statCache) listDirs(readNames func(string) (map[string]struct{}, error), dirs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := &listable{readNames: readNames, dirs: map[string]bool{}}
	if cur := c.lists.Load(); cur != nil {
		maps.Copy(next.dirs, cur.dirs)
	}
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			next.dirs[filepath.Clean(d)] = true
		}
	}
	c.lists.Store(next)
}

// absent reports whether p is below a listable directory whose listing lacks the
// name p goes through: then p does not exist, followed or not.
func (c *statCache) absent(p string) bool {
	ls := c.lists.Load()
	if ls == nil || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return false
	}
	for child, dir := p, parent(p); child != dir; child, dir = dir, parent(dir) {
		if !ls.dirs[dir] {
			continue
		}
		var names map[string]struct{}
		if v, ok := c.listed.Load(dir); ok {
			if names = v.(map[string]struct{}); names == nil {
				continue // unreadable or too large: a directory above may answer
			}
		} else {
			if fi, err := c.Stat(dir); err == nil && fi.IsDir() && fi.Size() <= listedMaxSize {
				names, _ = ls.readNames(dir)
			}
			v, _ := c.listed.LoadOrStore(dir, names)
			if names = v.(map[string]struct{}); names == nil {
				return false // ask
			}
		}
		_, found := names[filepath.Base(child)]
		return !found
	}
	return false
}

// parent is filepath.Dir of a clean absolute path, without Dir's Clean of the result
// (absent walks every path it is asked about up to the root).
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// notExist is the error lstat(2) or stat(2) would have returned for a missing p.
func notExist(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: syscall.ENOENT}
}

// Lstat is os.Lstat, remembered.
func (c *statCache) Lstat(p string) (fs.FileInfo, error) {
	if r, ok := c.l.Load(p); ok {
		return r.(statResult).fi, r.(statResult).err
	}
	var r statResult
	if c.absent(p) {
		r.err = notExist("lstat", p)
	} else {
		r.fi, r.err = c.lstat(p)
	}
	return keep(&c.l, p, r)
}

// Stat is os.Stat, remembered; the Lstat answer of a path that is no symbolic link
// answers it too.
func (c *statCache) Stat(p string) (fs.FileInfo, error) {
	if r, ok := c.s.Load(p); ok {
		return r.(statResult).fi, r.(statResult).err
	}
	if r, ok := c.l.Load(p); ok && r.(statResult).err == nil && r.(statResult).fi.Mode()&fs.ModeSymlink == 0 {
		return r.(statResult).fi, nil
	}
	var r statResult
	if c.absent(p) {
		r.err = notExist("stat", p)
	} else {
		r.fi, r.err = c.stat(p)
	}
	return keep(&c.s, p, r)
}

// keep remembers r for p in m unless the other goroutine, asking at the same time,
// was first: every caller then sees the one answer.
func keep(m *sync.Map, p string, r statResult) (fs.FileInfo, error) {
	v, _ := m.LoadOrStore(p, r)
	return v.(statResult).fi, v.(statResult).err
}
