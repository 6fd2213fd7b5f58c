package planner

import (
	"strings"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
	"github.com/devsandbox/devsandbox/isolator"
)

// mountEntry is one line of /proc/self/mountinfo: the file system (dev, its
// major:minor), the directory of it that is mounted (root, "/" for all of it) and
// where (at).
type mountEntry struct {
	dev, root, at string
}

// mountTable is the mounts of devsandbox's mount namespace, in mountinfo's order (a
// later mount at the same place covers an earlier one).
type mountTable []mountEntry

// parseMountInfo parses /proc/self/mountinfo's text; a line it cannot read is
// skipped.
func parseMountInfo(b []byte) mountTable {
	var t mountTable
	for _, e := range mountinfo.Parse(b) {
		t = append(t, mountEntry{dev: e.Dev, root: e.Root, at: e.Point})
	}
	return t
}

// isMountPoint reports whether something is mounted at p itself: a file bound
// onto its path shows there what its source holds, wherever that lies.
func (t mountTable) isMountPoint(p string) bool {
	for _, m := range t {
		if m.at == p && p != "/" {
			return true
		}
	}
	return false
}

// under returns the mount p lies in (the deepest mount point above it or at it, the
// latest of those at one place), and whether there is one.
func (t mountTable) under(p string) (mountEntry, bool) {
	var best mountEntry
	found := false
	for _, m := range t {
		if isolator.Within(p, m.at) && (!found || len(m.at) >= len(best.at)) {
			best, found = m, true
		}
	}
	return best, found
}

// mountAlias is another path of the same file: p lies in a mount of root of a file
// system at at, and the same file system is also mounted elsewhere, so the file is
// also path there.
type mountAlias struct {
	path string // the file's other path
	how  string // how, for people: "a mount shows /proj/conf at /etc/conf"
}

// aliases returns the other paths of the file at p (absolute, clean, its links
// resolved) that the mount table gives it: where another mount of the same file
// system shows the directory p lies in. A directory of the project bound elsewhere
// makes a file there also a file of the project. Paths covered by a later mount are
// returned too (a sandbox may see what this namespace does not); none is returned
// twice, nor p itself.
func (t mountTable) aliases(p string) []mountAlias {
	m, ok := t.under(p)
	if !ok {
		return nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, m.at), "/")
	fsPath := joinRel(m.root, rel) // p as a path of its file system
	var out []mountAlias
	seen := map[string]bool{p: true}
	for _, o := range t {
		if o.dev != m.dev || !isolator.Within(fsPath, o.root) {
			continue
		}
		a := joinRel(o.at, strings.TrimPrefix(strings.TrimPrefix(fsPath, o.root), "/"))
		if seen[a] {
			continue
		}
		seen[a] = true
		how := "its file system is also mounted at " + o.at
		if isolator.Within(m.root, o.root) {
			how = "a mount shows " + joinRel(o.at, strings.TrimPrefix(strings.TrimPrefix(m.root, o.root), "/")) + " at " + m.at
		}
		out = append(out, mountAlias{path: a, how: how})
	}
	return out
}

// joinRel is dir/rel for an absolute dir and a relative rel ("" is dir).
func joinRel(dir, rel string) string {
	switch {
	case rel == "":
		return dir
	case dir == "/":
		return "/" + rel
	}
	return dir + "/" + rel
}
