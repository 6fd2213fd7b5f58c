package planner

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// evalCache resolves symbolic links as filepath.EvalSymlinks does, remembering each
// directory it resolved, so the many paths one Build resolves below the same
// directories (the home's credential and tool paths: about forty) lstat each shared
// prefix once instead of once per path. It lives for one Build: a plan is never built
// from an answer older than the Build that asked.
type evalCache struct {
	lstat    func(string) (fs.FileInfo, error)
	readlink func(string) (string, error)
	fallback func(string) (string, error)
	done     map[string]evalResult
}

type evalResult struct {
	real string
	err  error
}

// maxLinks bounds the links one resolution follows, as the kernel's ELOOP does.
const maxLinks = 255

func newEvalCache(lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error), fallback func(string) (string, error)) *evalCache {
	return &evalCache{lstat: lstat, readlink: readlink, fallback: fallback, done: map[string]evalResult{}}
}

// eval is filepath.EvalSymlinks with the cache. Relative and unclean paths, and link
// targets with ".." past their first components, go to fallback, which is exact.
func (c *evalCache) eval(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return c.fallback(p)
	}
	links := 0
	return c.resolve(p, &links)
}

// resolve returns the real path of the clean absolute path p.
func (c *evalCache) resolve(p string, links *int) (string, error) {
	if p == "/" {
		return p, nil
	}
	if r, ok := c.done[p]; ok {
		return r.real, r.err
	}
	real, err := c.resolveUncached(p, links)
	c.done[p] = evalResult{real, err}
	return real, err
}

func (c *evalCache) resolveUncached(p string, links *int) (string, error) {
	dir, base := filepath.Split(p)
	rdir, err := c.resolve(filepath.Clean(dir), links)
	if err != nil {
		return "", err
	}
	q := filepath.Join(rdir, base)
	if q != p {
		// rdir holds no link: p resolves as q does, which another path may have asked.
		return c.resolve(q, links)
	}
	fi, err := c.lstat(q)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return q, nil
	}
	if *links++; *links > maxLinks {
		return "", &fs.PathError{Op: "lstat", Path: q, Err: errors.New("too many links")}
	}
	target, err := c.readlink(q)
	if err != nil {
		return "", err
	}
	base = rdir
	if filepath.IsAbs(target) {
		base = "/"
	}
	// Leading ".." components apply to base, which holds no link; a later ".." follows
	// a component that may be a link, which only the exact walk gets right.
	for target == ".." || strings.HasPrefix(target, "../") {
		base = filepath.Dir(base)
		target = strings.TrimPrefix(strings.TrimPrefix(target, ".."), "/")
	}
	if target == "" || hasDotDot(target) || strings.HasSuffix(target, "/") {
		return c.fallback(q)
	}
	return c.resolve(filepath.Join(base, target), links)
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
