package etcsnap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A treeIndex is what the last full walk of a set of entries' trees found, kept
// beside the snapshots (indexName), so that a launch whose trees did not change
// walks none of them: listing /etc/ssl/certs and /etc/alternatives, and checking
// their copies' listings, costs more than the binds the copies save.
//
// The index records, for each tree, the stamp of every host directory and entry the
// walk took the stat of (tree.seen) and what the walk concluded: the digest of the
// tree's key lines, or the note saying why it is bound. While every one of those
// stamps holds (one fstatat each, no listing), a walk would find the same: a
// directory's names change only with its mtime and ctime, a file's content, mode or
// owner only with its ctime, a symbolic link only by an entry of its directory.
// A walk stopped by a change in the racy window is not recorded.
//
// It also records the snapshot the trees were last checked in and the stamp of each
// of their directories there: a sealed directory's entries change only after a
// chmod, which moves its ctime, so while those hold the copy holds the names that
// were checked entry by entry. (A copied file's content is checked no further than
// the other files' of a snapshot are: by its kind, mode and size when it is built.) Anything that does not hold, a damaged or unreadable
// index included, means a full walk and check, and a new index.
//
// The index is as trustworthy as the root it lives in (openRoot): the user's own,
// writable by nobody else, as are the snapshots it describes.
type treeIndex struct {
	Format  string
	ID      string // the user's ids and groups (identity)
	Entries string // entriesHash of the entries it is for
	Trees   []indexTree
	Key     string       // the snapshot its trees were last checked in
	Snap    []indexStamp // their directories there, P relative to the snapshot
	// loadedFor is the entriesHash loadIndex read it for.
	loadedFor string
}

type indexTree struct {
	Source string
	Seen   []indexStamp // P relative to Source ("" for Source itself)
	Digest string       // the tree's key digest when it is copied
	Note   string       // why it is bound, when it is not
}

// indexStamp is a path's stamp: device, inode, mode, size, mtime and ctime.
type indexStamp struct {
	P string
	D uint64
	I uint64
	M uint32
	S int64
	T [4]int64
}

const indexFormat = "etcsnap-index/1"

func indexStampOf(p string, st *unix.Stat_t) indexStamp {
	return indexStamp{P: p, D: st.Dev, I: st.Ino, M: st.Mode, S: st.Size, T: [4]int64{st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec}}
}

// holds reports whether the path p under dirfd still has stamp s.
func (s indexStamp) holds(dirfd int, p string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && indexStampOf(s.P, &st) == s
}

// identity is the user's ids and groups: what decides what a tree holds.
func identity() string {
	id := self()
	groups := make([]int, 0, len(id.groups))
	for g := range id.groups {
		groups = append(groups, int(g))
	}
	sort.Ints(groups)
	b := fmt.Appendf(nil, "%d %d", id.uid, id.gid)
	for _, g := range groups {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(g), 10)
	}
	return string(b)
}

// entriesHash names a set of entries (not their content on the host).
func entriesHash(entries []Entry) string {
	b := make([]byte, 0, 64*len(entries))
	for _, e := range entries {
		b = strconv.AppendQuote(b, e.Name)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, e.Source)
		b = append(b, ' ')
		b = strconv.AppendBool(b, e.Dir)
		b = append(b, ' ')
		b = strconv.AppendBool(b, e.Tree)
		if e.Content != "" {
			// Another content is another snapshot: its index is its own, pruned with it.
			c := sha256.Sum256([]byte(e.Content))
			b = append(b, " content "...)
			b = hex.AppendEncode(b, c[:8])
		}
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// indexName is where the index of entries' trees lives under the root: a name
// pruning leaves alone (it is not a key) and that no snapshot shows.
func indexName(entries []Entry) string { return indexPrefix + entriesHash(entries) }

// indexPrefix begins the name of every index of trees; maxIndex bounds what is read of one.
const (
	indexPrefix = ".trees-"
	maxIndex    = 4 << 20
)

// loadIndex reads the index of entries' trees under rfd; nil when there is none, or
// it is not a regular file of the user's.
func loadIndex(rfd int, entries []Entry) *treeIndex {
	eh := entriesHash(entries)
	fd, err := unix.Openat(rfd, indexPrefix+eh, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "index")
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Nlink != 1 {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIndex))
	if err != nil {
		return nil
	}
	idx, err := parseIndex(string(data))
	if err != nil {
		return nil
	}
	idx.loadedFor = eh
	return idx
}

// The index is text, a line each (decoding JSON cost most of a launch's check):
//
//	etcsnap-index/1
//	id <identity>
//	entries <entriesHash>
//	key <key>
//	tree <quoted source> <quoted digest> <quoted note>
//	seen <quoted path> <dev> <ino> <mode> <size> <mtime s> <ns> <ctime s> <ns>
//	snap <quoted path> <dev> <ino> <mode> <size> <mtime s> <ns> <ctime s> <ns>
//
// seen lines belong to the tree line above them.
func (idx *treeIndex) text() []byte {
	b := append([]byte(indexFormat), '\n')
	b = append(append(append(b, "id "...), idx.ID...), '\n')
	b = append(append(append(b, "entries "...), idx.Entries...), '\n')
	b = append(append(append(b, "key "...), idx.Key...), '\n')
	for _, t := range idx.Trees {
		b = append(b, "tree "...)
		b = strconv.AppendQuote(b, t.Source)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, t.Digest)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, t.Note)
		b = append(b, '\n')
		for _, st := range t.Seen {
			b = st.appendLine(b, "seen ")
		}
	}
	for _, st := range idx.Snap {
		b = st.appendLine(b, "snap ")
	}
	return b
}

func (s indexStamp) appendLine(b []byte, kind string) []byte {
	b = append(b, kind...)
	b = strconv.AppendQuote(b, s.P)
	for _, u := range []uint64{s.D, s.I, uint64(s.M)} {
		b = append(b, ' ')
		b = strconv.AppendUint(b, u, 10)
	}
	for _, n := range []int64{s.S, s.T[0], s.T[1], s.T[2], s.T[3]} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '\n')
}

var errIndex = errors.New("malformed index")

func parseIndex(text string) (*treeIndex, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 4 || lines[0] != indexFormat {
		return nil, errIndex
	}
	idx := &treeIndex{Format: lines[0]}
	for _, l := range lines[1:] {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "id":
			idx.ID = rest
		case "entries":
			idx.Entries = rest
		case "key":
			idx.Key = rest
		case "tree":
			var t indexTree
			for _, f := range []*string{&t.Source, &t.Digest, &t.Note} {
				q, err := strconv.QuotedPrefix(rest)
				if err != nil {
					return nil, errIndex
				}
				if *f, err = strconv.Unquote(q); err != nil {
					return nil, errIndex
				}
				rest = strings.TrimPrefix(rest[len(q):], " ")
			}
			idx.Trees = append(idx.Trees, t)
		case "seen", "snap":
			st, err := parseStamp(rest)
			if err != nil {
				return nil, err
			}
			if kind == "snap" {
				idx.Snap = append(idx.Snap, st)
			} else if n := len(idx.Trees); n > 0 {
				idx.Trees[n-1].Seen = append(idx.Trees[n-1].Seen, st)
			} else {
				return nil, errIndex
			}
		default:
			return nil, errIndex
		}
	}
	return idx, nil
}

func parseStamp(rest string) (indexStamp, error) {
	var s indexStamp
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return s, errIndex
	}
	if s.P, err = strconv.Unquote(q); err != nil {
		return s, errIndex
	}
	f := strings.Fields(rest[len(q):])
	if len(f) != 8 {
		return s, errIndex
	}
	var u [3]uint64
	for i := range u {
		if u[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
			return s, errIndex
		}
	}
	var n [5]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[3+i], 10, 64); err != nil {
			return s, errIndex
		}
	}
	s.D, s.I, s.M, s.S, s.T = u[0], u[1], uint32(u[2]), n[0], [4]int64{n[1], n[2], n[3], n[4]}
	return s, nil
}

// holds reports whether the index answers for entries as the host is now: the same
// format, user, entries and trees, and every stamp it recorded of them holds.
func (idx *treeIndex) holds(entries []Entry) bool {
	if idx.Format != indexFormat || idx.ID != identity() || idx.Entries != idx.loadedFor {
		return false
	}
	n := 0
	for _, e := range entries {
		if !e.Tree {
			continue
		}
		r := idx.tree(e.Source)
		if r == nil || len(r.Seen) == 0 || !r.holds() {
			return false
		}
		n++
	}
	return n == len(idx.Trees)
}

// holds reports whether every stamp seen of the tree still holds: the source
// itself through a descriptor opened without following a link, each path under it
// relative to that descriptor.
func (t *indexTree) holds() bool {
	fd, err := unix.Open(t.Source, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for _, s := range t.Seen {
		p := s.P
		if p == "" {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || indexStampOf("", &st) != s {
				return false
			}
			continue
		}
		if !s.holds(fd, p) {
			return false
		}
	}
	return true
}

func (idx *treeIndex) tree(src string) *indexTree {
	for i := range idx.Trees {
		if idx.Trees[i].Source == src {
			return &idx.Trees[i]
		}
	}
	return nil
}

// errStale marks an index whose record of the snapshot no longer holds.
var errStale = errors.New("the index of the trees does not describe this snapshot")

// checkSnap verifies that the snapshot k (open as fd) is the one the index
// recorded and its trees' directories and files are as they were then.
func (idx *treeIndex) checkSnap(fd int, k string) error {
	if idx.Key != k {
		return errStale
	}
	for _, s := range idx.Snap {
		if !s.holds(fd, s.P) {
			return fmt.Errorf("%w: %s", errStale, s.P)
		}
	}
	return nil
}

// saveIndex records what kd's walks found and, for the snapshot k (open as fd), the
// stamps of its trees' directories and files. It is written to a temporary file
// and renamed into place; failing to, it is not there, and the next launch walks.
func saveIndex(rfd, fd int, k string, kd *keyed) {
	idx := treeIndex{Format: indexFormat, ID: identity(), Entries: entriesHash(kd.requested), Key: k}
	for i, e := range kd.requested {
		if !e.Tree {
			continue
		}
		if kd.walked == nil || kd.record[i].Source == "" {
			return // not walked, or walked in a racy moment: nothing to record
		}
		idx.Trees = append(idx.Trees, kd.record[i])
		t := kd.trees[i]
		if t == nil {
			continue
		}
		for _, n := range t.nodes {
			if n.kind != nodeDir && n.kind != nodeClosedDir {
				continue
			}
			p := path.Join(e.Name, n.rel)
			var st unix.Stat_t
			if unix.Fstatat(fd, p, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				return
			}
			idx.Snap = append(idx.Snap, indexStampOf(p, &st))
		}
	}
	data := idx.text()
	tmp := tmpPrefix + randomName()
	if err := writeFile(rfd, tmp, data, 0o400, nil); err != nil {
		_ = unix.Unlinkat(rfd, tmp, 0)
		return
	}
	if err := unix.Renameat(rfd, tmp, rfd, indexName(kd.requested)); err != nil {
		_ = unix.Unlinkat(rfd, tmp, 0)
	}
}
