package diskguard

import (
	"bytes"
	"strings"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
	"github.com/devsandbox/devsandbox/isolator"
)

// Below returns the mounts of table (a mount namespace's, mountinfo's order) whose
// mount point lies strictly below one of dirs (absolute, clean, without links) and
// that a path reaches: a bind of dirs, recursive in every isolator, shows the sandbox
// each of them, writable where the directory is, on a file system of its own that
// the guard must watch too. A mount covered by another (one mounted later on its
// point or above it) is left out: no path reaches it, here or in the sandbox. Each
// is returned once, in table's order. Pure.
func Below(table []mountinfo.Entry, dirs []string) []mountinfo.Entry {
	var out []mountinfo.Entry
	var r *reach
	for _, e := range table {
		below := false
		for _, d := range dirs {
			if e.Point != d && isolator.Within(e.Point, d) {
				below = true
				break
			}
		}
		if !below {
			continue
		}
		if r == nil {
			r = newReach(table)
		}
		if r.at(e.Point) == e.ID {
			out = append(out, e)
		}
	}
	return out
}

// belowIn is Below of the mount table text b.
func belowIn(b []byte, dirs []string) []mountinfo.Entry {
	if !mayHold(b, dirs) {
		return nil
	}
	return Below(mountinfo.Parse(b), dirs)
}

// mayHold reports whether the mount table text b may name a mount point below one of
// dirs: false when no line's mount point (its fifth field; the kernel escapes a space,
// a tab, a newline and a backslash in it) starts with one of them, then "/". It
// spares the launch the parse of a table that has nothing below them, the common
// case, in one pass over the text.
func mayHold(b []byte, dirs []string) bool {
	prefixes := make([][]byte, 0, len(dirs))
	for _, d := range dirs {
		if d == "/" {
			return true
		}
		prefixes = append(prefixes, append(escape(d), '/'))
	}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		point := field(line, 4)
		for _, p := range prefixes {
			if bytes.HasPrefix(point, p) {
				return true
			}
		}
	}
	return false
}

// field is the n-th (from 0) of line's fields, one space apart; nil without it.
func field(line []byte, n int) []byte {
	for range n {
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return nil
		}
		line = line[i+1:]
	}
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		line = line[:i]
	}
	return line
}

// escape is mountinfo's escape of path.
func escape(path string) []byte {
	out := make([]byte, 0, len(path)+8)
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case ' ', '\t', '\n', '\\':
			out = append(out, '\\', '0'+c>>6, '0'+c>>3&7, '0'+c&7)
		default:
			out = append(out, c)
		}
	}
	return out
}

// reach resolves a path to the mount it lands in, as the kernel's lookup does: from
// the root mount, at each directory of the path, onto the mount stacked there last.
type reach struct {
	table    []mountinfo.Entry
	children map[int][]int // a mount's ID: the indexes of the mounts on it
	root     int           // the root mount's index; -1 without one
}

func newReach(table []mountinfo.Entry) *reach {
	r := &reach{table: table, children: map[int][]int{}, root: -1}
	ids := map[int]bool{}
	for _, e := range table {
		ids[e.ID] = true
	}
	for i, e := range table {
		if !ids[e.Parent] || e.Parent == e.ID {
			if e.Point == "/" {
				r.root = i // the namespace's root: its parent is outside the table
			}
			continue
		}
		r.children[e.Parent] = append(r.children[e.Parent], i)
	}
	return r
}

// at is the ID of the mount path lands in; -1 when the table has no root.
func (r *reach) at(path string) int {
	if r.root < 0 {
		return -1
	}
	cur := r.root
	cur = r.onto(cur, "/")
	prefix := ""
	for _, name := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if name == "" {
			continue
		}
		prefix += "/" + name
		cur = r.onto(cur, prefix)
	}
	return r.table[cur].ID
}

// onto is the mount stacked last at point on the mount of index cur (cur itself if
// none): a mount made on a mount point covers what was there.
func (r *reach) onto(cur int, point string) int {
	for range len(r.table) { // bounded: a table whose parents loop ends here

		next := -1
		for _, c := range r.children[r.table[cur].ID] {
			if r.table[c].Point == point {
				next = c // the later one, if two sit on one point of one parent
			}
		}
		if next < 0 || next == cur {
			return cur
		}
		cur = next
	}
	return cur
}
