package etcsnap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
)

// A tree is a host directory copied whole into the snapshot (Entry.Tree): /etc/ssl,
// /etc/alternatives, a JDK's /etc directory. Without it each is a read-only bind over
// a mount point of the snapshot, a mount operation bwrap pays at every launch.
//
// What the sandbox sees is what the bind showed, read-only: a regular file as a copy
// of its content (0444, or 0555 when the user may execute it), a symbolic link as a
// link with the same target (never followed here: it resolves inside the sandbox as
// it did through the bind), a directory as a directory (0555). A directory the user
// can neither list nor enter is an empty directory of mode 0000, and a file the user
// cannot read an empty file of mode 0000: present, not enterable or readable, as
// through the bind (a read-only mount: its owner cannot chmod it).
//
// A tree is not copied, and stays a mount point its caller binds the host directory
// over (Snapshot.Entries, Snapshot.Notes), when the copy could not look the same or
// would hold what the host keeps from other users:
//   - it is not a directory (a symbolic link, absent) or is over MaxTreeEntries
//     entries, MaxTreeStats files and directories or MaxTreeBytes bytes of files;
//   - an entry is a device, a socket or a fifo; a directory the user can list but not
//     enter or enter but not list; a file the user can execute but not read;
//   - a file or directory the user can read is kept from others (mode without o+r,
//     or o+rx for a directory: a key readable through a group);
//
// A tree that changed within racyWindow, or while it was walked, gives no snapshot
// this once (an error wrapping ErrRacy or ErrChanged, as for a racy file: the caller
// copies the files one by one); the first launch after the window copies it.
//
// The key covers a tree through every directory's identity and change times (an
// entry added, removed, renamed or replaced, a symbolic link retargeted, changes its
// directory's mtime and ctime), every regular file's stamp, and the user's identity
// and groups (what the user may read). Links are not read for the key: a link's
// target cannot change in place.

// errNoTree marks why a tree is bound rather than copied.
var errNoTree = errors.New("bound, not copied")

type nodeKind byte

const (
	nodeDir        nodeKind = iota // copied directory, 0555
	nodeClosedDir                  // a directory the user can neither list nor enter: empty, 0000
	nodeFile                       // copied file, 0444
	nodeExec                       // copied file the user may execute, 0555
	nodeClosedFile                 // a file the user cannot read: empty, 0000
	nodeLink                       // symbolic link
)

// kind is the file type and mode a node has in the snapshot.
func (k nodeKind) kind() (typ, mode uint32) {
	switch k {
	case nodeDir:
		return unix.S_IFDIR, 0o555
	case nodeClosedDir:
		return unix.S_IFDIR, 0
	case nodeFile:
		return unix.S_IFREG, 0o444
	case nodeExec:
		return unix.S_IFREG, 0o555
	case nodeClosedFile:
		return unix.S_IFREG, 0
	default:
		return unix.S_IFLNK, 0o777
	}
}

func (k nodeKind) dirent() byte {
	switch k {
	case nodeDir, nodeClosedDir:
		return unix.DT_DIR
	case nodeLink:
		return unix.DT_LNK
	default:
		return unix.DT_REG
	}
}

var nodeNames = [...]string{"dir", "closed-dir", "file", "exec", "closed-file", "link"}

// node is one name of a tree: rel is its path below the tree's root ("" for the root).
type node struct {
	rel    string
	kind   nodeKind
	st     stamp // directories and regular files
	parent int   // index of the directory holding it; -1 for the root
}

type tree struct {
	nodes []node
	bytes int64
	// seen is every host directory and entry the walk took the stat of, as far as
	// it got: while they all hold, a walk finds the same (treeIndex).
	seen []indexStamp
}

// treeWalker walks a host tree for its key.
type treeWalker struct {
	now time.Time
	t   *tree
	id  ident
	// kernel reports whether the user may access name under fd with mode (R_OK,
	// X_OK): faccessat, in the tests what they say.
	kernel func(fd int, name string, st *unix.Stat_t, mode uint32) bool
}

func faccessat(fd int, name string, _ *unix.Stat_t, mode uint32) bool {
	return unix.Faccessat(fd, name, mode, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) == nil
}

// ident is who the sandbox runs as: the user's ids and groups, without capabilities
// (bwrap drops them all).
type ident struct {
	uid, gid uint32
	groups   map[uint32]bool
}

func self() ident {
	id := ident{uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), groups: map[uint32]bool{}}
	gs, _ := unix.Getgroups()
	for _, g := range gs {
		id.groups[uint32(g)] = true
	}
	return id
}

// allows reports whether st's mode bits give id the access want (unix.R_OK, X_OK).
func (id ident) allows(st *unix.Stat_t, want uint32) bool {
	perm := st.Mode & 7
	switch {
	case st.Uid == id.uid:
		perm = st.Mode >> 6 & 7
	case st.Gid == id.gid || id.groups[st.Gid]:
		perm = st.Mode >> 3 & 7
	}
	return perm&want == want
}

// access returns whether the user may read and execute (list and enter) name in the
// directory fd, whose stat is st. The kernel decides (faccessat: an ACL may grant or
// refuse more than the mode bits); where it disagrees with the mode bits alone, as
// for root, whose capabilities the sandbox does not have, or under an ACL, what the
// sandbox would see is not certain and the tree is bound.
func (w *treeWalker) access(fd int, name string, st *unix.Stat_t) (r, x bool, err error) {
	r, x = w.kernel(fd, name, st, unix.R_OK), w.kernel(fd, name, st, unix.X_OK)
	if r != w.id.allows(st, unix.R_OK) || x != w.id.allows(st, unix.X_OK) {
		return false, false, fmt.Errorf("the user's access differs from its mode bits %o (capabilities, or an ACL)", st.Mode&0o7777)
	}
	return r, x, nil
}

// walkTree walks the host directory src. An error wraps errNoTree: the tree is
// bound instead, and the error says why; the tree returned then holds only what
// the walk saw (tree.seen), nil when src could not be opened.
func walkTree(src string, now time.Time) (*tree, error) {
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errNoTree, src, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errNoTree, src, err)
	}
	w := &treeWalker{now: now, t: &tree{}, id: self(), kernel: faccessat}
	w.see("", &st)
	if st.Mode&0o005 != 0o005 {
		return w.t, fmt.Errorf("%w: %s: kept from other users (mode %o)", errNoTree, src, st.Mode&0o7777)
	}
	if err := w.dir(fd, "", -1, &st); err != nil {
		return w.t, fmt.Errorf("%w: %s: %w", errNoTree, src, err)
	}
	return w.t, nil
}

// walkedDir, set by tests only, is called after each directory of a tree is listed.
var walkedDir func(rel string)

func (w *treeWalker) see(rel string, st *unix.Stat_t) {
	w.t.seen = append(w.t.seen, indexStampOf(rel, st))
}

func (w *treeWalker) add(n node) (int, error) {
	if len(w.t.nodes) >= MaxTreeEntries {
		return 0, fmt.Errorf("more than %d entries", MaxTreeEntries)
	}
	w.t.nodes = append(w.t.nodes, n)
	return len(w.t.nodes) - 1, nil
}

// dir records the directory fd (rel, with stat st) and what it holds.
func (w *treeWalker) dir(fd int, rel string, parent int, st *unix.Stat_t) error {
	s := stampOf(st)
	if racy(s, w.now) {
		return fmt.Errorf("%s: %w", relName(rel), ErrRacy)
	}
	self, err := w.add(node{rel: rel, kind: nodeDir, st: s, parent: parent})
	if err != nil {
		return err
	}
	type child struct {
		name string
		typ  byte
	}
	var kids []child
	if err := dirent.Read(fd, relName(rel), 8192, func(name string, typ byte) bool {
		kids = append(kids, child{name, typ})
		return len(kids) <= MaxTreeEntries
	}); err != nil {
		return err
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].name < kids[j].name })
	if walkedDir != nil {
		walkedDir(rel)
	}
	for _, k := range kids {
		crel := path.Join(rel, k.name)
		if k.typ == unix.DT_LNK {
			if _, err := w.add(node{rel: crel, kind: nodeLink, parent: self}); err != nil {
				return err
			}
			continue
		}
		if err := w.entry(fd, k.name, crel, self); err != nil {
			return err
		}
	}
	// An entry added or removed while it was listed: the listing may be neither.
	var after unix.Stat_t
	if err := unix.Fstat(fd, &after); err != nil {
		return err
	}
	if stampOf(&after) != s {
		return fmt.Errorf("%s: %w", relName(rel), ErrChanged)
	}
	return nil
}

// entry records the entry name of the directory fd that is not a symbolic link by
// its directory entry's type.
func (w *treeWalker) entry(fd int, name, rel string, parent int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	w.see(rel, &st)
	if len(w.t.seen) > MaxTreeStats {
		return fmt.Errorf("more than %d files and directories", MaxTreeStats)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK { // a file system without d_type
		_, err := w.add(node{rel: rel, kind: nodeLink, parent: parent})
		return err
	}
	r, x, err := w.access(fd, name, &st)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s := stampOf(&st)
		k := nodeFile
		switch {
		case !r && x:
			return fmt.Errorf("%s: executable but not readable", rel)
		case !r:
			k = nodeClosedFile
		case st.Mode&0o004 == 0:
			return fmt.Errorf("%s: kept from other users (mode %o)", rel, st.Mode&0o7777)
		case x:
			k = nodeExec
		}
		if k != nodeClosedFile {
			if racy(s, w.now) {
				return fmt.Errorf("%s: %w", rel, ErrRacy)
			}
			if w.t.bytes += st.Size; w.t.bytes > MaxTreeBytes {
				return fmt.Errorf("more than %d bytes", MaxTreeBytes)
			}
		}
		_, err := w.add(node{rel: rel, kind: k, st: s, parent: parent})
		return err
	case unix.S_IFDIR:
		switch {
		case !r && !x:
			_, err := w.add(node{rel: rel, kind: nodeClosedDir, st: stampOf(&st), parent: parent})
			return err
		case !r || !x:
			return fmt.Errorf("%s: a directory that can be listed or entered but not both", rel)
		case st.Mode&0o005 != 0o005:
			return fmt.Errorf("%s: kept from other users (mode %o)", rel, st.Mode&0o7777)
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(cfd)
		var cst unix.Stat_t
		if err := unix.Fstat(cfd, &cst); err != nil {
			return err
		}
		if cst.Dev != st.Dev || cst.Ino != st.Ino {
			return fmt.Errorf("%s: %w", rel, ErrChanged)
		}
		return w.dir(cfd, rel, parent, &cst)
	default:
		return fmt.Errorf("%s: not a file, a directory or a symbolic link (mode %o)", rel, st.Mode)
	}
}

func relName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// appendTree appends the key's lines of tree t at name: the user's identity (what
// the user may read decides what the tree holds) and one line per node.
func appendTree(b []byte, name string, t *tree) []byte {
	b = strconv.AppendQuote(b, name)
	b = append(b, " tree uid="...)
	b = strconv.AppendInt(b, int64(os.Geteuid()), 10)
	b = append(b, " gid="...)
	b = strconv.AppendInt(b, int64(os.Getegid()), 10)
	groups, _ := unix.Getgroups()
	sort.Ints(groups)
	b = append(b, " groups="...)
	for i, g := range groups {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(g), 10)
	}
	b = append(b, '\n')
	for _, n := range t.nodes {
		b = append(b, ' ')
		b = strconv.AppendQuote(b, n.rel)
		b = append(b, ' ')
		b = append(b, nodeNames[n.kind]...)
		if n.kind == nodeLink {
			b = append(b, '\n')
			continue
		}
		b = appendStampTail(b, n.st)
	}
	return b
}

// buildTree copies the host tree src, as walked into t, to name under the snapshot
// being built (tfd). Every file is read from a descriptor whose stat matches the
// walk's, every directory is checked unchanged after it was copied, and nothing on
// the host is reached through a symbolic link.
func buildTree(tfd int, name, src string, t *tree, sy *syncer) error {
	hfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	defer unix.Close(hfd)
	for _, n := range t.nodes {
		dst := path.Join(name, n.rel)
		err := withParent(tfd, dst, func(spfd int, base string) error {
			switch n.kind {
			case nodeDir, nodeClosedDir:
				return unix.Mkdirat(spfd, base, 0o700)
			case nodeClosedFile:
				return writeFile(spfd, base, nil, 0, sy)
			}
			return withParent(hfd, n.rel, func(hpfd int, hbase string) error {
				if n.kind == nodeLink {
					target, err := readlinkat(hpfd, hbase)
					if err != nil {
						return fmt.Errorf("%s: %w", path.Join(src, n.rel), err)
					}
					return unix.Symlinkat(target, spfd, base)
				}
				data, err := readAt(hpfd, hbase, path.Join(src, n.rel), n.st)
				if err != nil {
					return err
				}
				_, mode := n.kind.kind()
				return writeFile(spfd, base, data, mode, sy)
			})
		})
		if err != nil {
			return err
		}
	}
	// Each directory as it was walked: nothing added, removed or replaced since.
	for i := len(t.nodes) - 1; i >= 0; i-- {
		n := t.nodes[i]
		if n.kind != nodeDir && n.kind != nodeClosedDir {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(hfd, relName(n.rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || stampOf(&st) != n.st {
			return fmt.Errorf("%s: %w", path.Join(src, n.rel), ErrChanged)
		}
		_, mode := n.kind.kind()
		if err := withParent(tfd, path.Join(name, n.rel), func(pfd int, base string) error { return sealDirMode(pfd, base, mode, sy) }); err != nil {
			return err
		}
	}
	return nil
}

func readlinkat(fd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", fmt.Errorf("%s: %w: link target too long", name, fs.ErrInvalid)
	}
	return string(buf[:n]), nil
}

// checkTree verifies the copy of t at name in the open snapshot fd: each directory
// holds exactly the names and types the walk found, each directory and file has its
// kind, mode and (files) size. Links are checked by their directories' listings.
func checkTree(fd int, name string, t *tree, uid uint32) error {
	kids := make(map[int]map[string]byte, 8)
	for _, n := range t.nodes {
		if n.parent >= 0 {
			if kids[n.parent] == nil {
				kids[n.parent] = map[string]byte{}
			}
			kids[n.parent][path.Base(n.rel)] = n.kind.dirent()
		}
		if n.kind == nodeLink {
			continue
		}
		typ, mode := n.kind.kind()
		size := int64(-1)
		switch n.kind {
		case nodeFile, nodeExec:
			size = n.st.size
		case nodeClosedFile:
			size = 0
		}
		p := path.Join(name, n.rel)
		if err := checkEntry(fd, p, uid, typ, mode, size); err != nil {
			return err
		}
	}
	for i, n := range t.nodes {
		if n.kind != nodeDir {
			continue
		}
		if err := checkListing(fd, path.Join(name, n.rel), kids[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkListing verifies that the directory dir under fd holds exactly want (name ->
// d_type).
func checkListing(fd int, dir string, want map[string]byte) error {
	d, err := unix.Openat(fd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errInvalid, dir, err)
	}
	defer unix.Close(d)
	n, bad := 0, ""
	err = dirent.Read(d, dir, 8192, func(name string, typ byte) bool {
		n++
		if w, ok := want[name]; !ok || w != typ {
			bad = name
			return false
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case bad != "":
		return fmt.Errorf("%w: %s holds %s", errInvalid, dir, bad)
	case n != len(want):
		return fmt.Errorf("%w: %s holds %d names, not %d", errInvalid, dir, n, len(want))
	}
	return nil
}

// describe says, for a note, why the tree from src is bound.
func describe(src string, err error) string {
	return src + " is bound read-only over the snapshot, not copied into it: " + strings.TrimPrefix(err.Error(), errNoTree.Error()+": "+src+": ")
}
