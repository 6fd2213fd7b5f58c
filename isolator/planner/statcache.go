package planner

import (
	"io/fs"
)

// statCache remembers the Lstat and Stat answers of one Build. The tool registry's
// detection, the mount builder's symlink checks, the tripwires and the link resolution
// ask about the same paths (the home's configuration directories, the project's agent
// files) several times each; every answer after the first comes from here. Like
// evalCache it lives for one Build, which creates nothing it later asks about, so an
// answer is never older than the Build: what the sandbox is given is still checked
// when it is opened (package pin) and watched while it runs.
type statCache struct {
	lstat, stat func(string) (fs.FileInfo, error)
	l, s        map[string]statResult
}

type statResult struct {
	fi  fs.FileInfo
	err error
}

func newStatCache(lstat, stat func(string) (fs.FileInfo, error)) *statCache {
	return &statCache{lstat: lstat, stat: stat, l: map[string]statResult{}, s: map[string]statResult{}}
}

// Lstat is lstat(2), remembered.
func (c *statCache) Lstat(p string) (fs.FileInfo, error) {
	if r, ok := c.l[p]; ok {
		return r.fi, r.err
	}
	fi, err := c.lstat(p)
	c.l[p] = statResult{fi, err}
	return fi, err
}

// Stat is stat(2), remembered; a path Lstat found and that is no symlink is its own
// answer.
func (c *statCache) Stat(p string) (fs.FileInfo, error) {
	if r, ok := c.s[p]; ok {
		return r.fi, r.err
	}
	if r, ok := c.l[p]; ok && r.err == nil && r.fi.Mode()&fs.ModeSymlink == 0 {
		return r.fi, nil
	}
	fi, err := c.stat(p)
	c.s[p] = statResult{fi, err}
	return fi, err
}
