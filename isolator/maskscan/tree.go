package maskscan

import (
	"slices"
	"strings"
)

// node is a directory, as a scan read it or as the cache remembers it.
type node struct {
	name    string // base name; "" for the root
	parent  *node  // nil for the root; for error messages
	ok      bool   // st, matches and kids describe the directory
	trusted bool   // loaded from a cache written long enough after st (see margin)
	st      stamp
	matches []entry // sorted by name
	kids    []*node // subdirectories that are not skipped, sorted by name
}

// stamp identifies a directory and the last change to its entries.
type stamp struct {
	dev, ino     uint64
	mtime, ctime int64 // ns since the epoch
}

// entry is a masked entry of a directory.
type entry struct {
	name    string
	symlink bool
}

// racy reports whether st is too recent, relative to start (ns), for a read that
// started at start to be sure it saw every change that st covers.
func racy(st stamp, start int64) bool {
	limit := start - int64(margin)
	return st.mtime >= limit || st.ctime >= limit
}

// update records what a read of n found: its stamp st (taken before the read), its
// subdirectories dirs and its masked entries ents, both sorted. Subdirectories that
// n already had keep their nodes, and with them their cache. It reports whether the
// cache must be rewritten: n changed, or it was read only for being racy and has
// settled since.
func (n *node) update(st stamp, dirs []string, ents []entry, start int64) (dirty bool) {
	if n.ok && n.st == st && slices.Equal(n.matches, ents) && slices.EqualFunc(n.kids, dirs, func(k *node, d string) bool { return k.name == d }) {
		return !racy(st, start)
	}
	kids := make([]*node, len(dirs))
	j := 0
	for i, d := range dirs {
		for j < len(n.kids) && n.kids[j].name < d {
			j++
		}
		if j < len(n.kids) && n.kids[j].name == d {
			kids[i] = n.kids[j]
			continue
		}
		kids[i] = &node{name: d, parent: n}
	}
	n.ok, n.st, n.matches, n.kids = true, st, ents, kids
	return true
}

// forget drops what is known of n, which could not be read, and reports whether
// anything was known.
func (n *node) forget() bool {
	known := n.ok || len(n.kids) > 0 || len(n.matches) > 0
	*n = node{name: n.name, parent: n.parent}
	return known
}

// path is n's path below its root, "" for the root.
func (n *node) path() string {
	var parts []string
	for ; n.parent != nil; n = n.parent {
		parts = append(parts, n.name)
	}
	slices.Reverse(parts)
	return strings.Join(parts, "/")
}
