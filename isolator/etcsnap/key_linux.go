package etcsnap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// format is part of every key: a change to the layout or the checks of a snapshot
// changes it, so snapshots of an older devsandbox are never reused, only pruned.
const format = "etcsnap/1"

// racyWindow is how recent a source's change may be before its snapshot is not kept.
// File systems stamp ctime and mtime from a clock that ticks every few milliseconds
// (jiffies); a file written twice within one tick, with the same size, keeps its
// stat tuple, so a snapshot built between the two writes would be reused with the
// old content. A file whose last change is older than this cannot change within the
// same tick any more (the approach git takes for "racily clean" index entries).
const racyWindow = 2 * time.Second

// maxFile bounds a copied file: the files are small (ld.so.cache, the largest, is
// tens of KiB); anything bigger is not the file the view expects.
const maxFile = 16 << 20

// stamp is what a key records of a copied file's host source.
type stamp struct {
	missing bool
	dev     uint64
	ino     uint64
	mode    uint32
	size    int64
	mtime   unix.Timespec
	ctime   unix.Timespec
}

func stampOf(st *unix.Stat_t) stamp {
	return stamp{dev: st.Dev, ino: st.Ino, mode: st.Mode, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// Key names the snapshot of entries as the host is now, from one stat of each source
// (following symbolic links: /etc/resolv.conf is often one, and what it points at is
// what is copied).
//
// Why a stat tuple and not the content: reading and hashing every file on each
// launch costs what the snapshot saves. The tuple (device, inode, mode, size, mtime
// and ctime to the nanosecond) changes whenever the content can have: a file
// replaced by rename (how passwd, group, hosts and resolv.conf are updated) has
// another inode and a new ctime; one written in place gets a new ctime, which no
// unprivileged call can set back (utimensat sets mtime and atime only, and itself
// moves ctime). What remains, two writes within one clock tick, is ErrRacy. A source
// that does not exist is recorded as such (its entry is an empty file, as a copy of a
// vanished file was); one that is not a regular file is an error. A file of given
// content (Entry.Content) is keyed by the SHA-256 of that content.
func Key(entries []Entry, now time.Time) (string, error) {
	k, _, err := key(entries, now, nil)
	return k, err
}

// keyed is what working out a key found on the host.
type keyed struct {
	stamps []stamp // of each copied file's source
	trees  []*tree // of each tree that is copied; nil for the rest
	// entries is what the snapshot holds: the entries, with each tree that is bound
	// instead of copied as a directory mount point.
	entries []Entry
	notes   []string // why trees are bound
	// walked is each tree's walk, copied or not (nil: not walked, or its root could
	// not be opened), and record what the index keeps of it (treeIndex).
	walked []*tree
	record []indexTree
	// idx, when set, gave every tree's digest or note without a walk; check then
	// compares the snapshot's trees with the stamps it recorded.
	idx       *treeIndex
	requested []Entry // the entries asked for
}

// key works out the key of entries. With idx (the last walk's record of the trees,
// loadIndex), a tree whose recorded host stamps all still hold is not walked again.
func key(entries []Entry, now time.Time, idx *treeIndex) (string, *keyed, error) {
	h := sha256.New()
	// Each line is appended to one buffer with strconv rather than written with
	// fmt.Fprintf (a quarter of the key's time): the bytes hashed are the same, so are
	// the keys (TestKeyText).
	line := make([]byte, 0, 256)
	line = append(line, format...)
	line = append(line, '\n')
	stamps := make([]stamp, len(entries))
	kd := &keyed{stamps: stamps, entries: entries, requested: entries}
	if idx != nil && !idx.holds(entries) {
		idx = nil
	}
	kd.idx = idx
	for i, e := range entries {
		if e.Tree {
			digest, note, err := treeKey(kd, i, e, now)
			if err != nil {
				return "", nil, err
			}
			if note == "" {
				line = strconv.AppendQuote(line, e.Name)
				line = append(line, " tree "...)
				line = append(line, digest...)
				line = append(line, '\n')
				continue
			}
			if kd.notes == nil { // the first tree bound: the caller's entries stay as they are
				kd.entries = slices.Clone(entries)
			}
			kd.entries[i] = Entry{Name: e.Name, Dir: true}
			kd.notes = append(kd.notes, note)
			e = kd.entries[i]
		}
		if e.Content != "" {
			sum := sha256.Sum256([]byte(e.Content))
			line = strconv.AppendQuote(line, e.Name)
			line = append(line, " content "...)
			line = hex.AppendEncode(line, sum[:])
			line = append(line, '\n')
			continue
		}
		if e.Source == "" {
			line = strconv.AppendQuote(line, e.Name)
			line = append(line, " mount dir="...)
			line = strconv.AppendBool(line, e.Dir)
			line = append(line, '\n')
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(e.Source, &st); err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				return "", nil, fmt.Errorf("%s: %w", e.Source, err)
			}
			stamps[i].missing = true
			line = strconv.AppendQuote(line, e.Name)
			line = append(line, " missing\n"...)
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return "", nil, fmt.Errorf("%s: %w: not a regular file", e.Source, fs.ErrInvalid)
		}
		if st.Size > maxFile {
			return "", nil, fmt.Errorf("%s: %w: larger than %d bytes", e.Source, fs.ErrInvalid, maxFile)
		}
		s := stampOf(&st)
		if racy(s, now) {
			return "", nil, fmt.Errorf("%s: %w", e.Source, ErrRacy)
		}
		stamps[i] = s
		line = appendStamp(line, e, s)
	}
	h.Write(line)
	return hex.EncodeToString(h.Sum(nil)[:16]), kd, nil
}

// treeKey returns the digest of the tree entries[i] (its walk's key lines), or the
// note saying why it is bound instead; from kd.idx when that holds it, else from a
// walk, which kd keeps for the build, the check and the index.
//
// A tree that changed within the racy window, or while it was walked, is an error
// (wrapping ErrRacy or ErrChanged), as a racy file is: the launch binds the trees
// and copies the files one by one this once, and the first launch after the window
// builds the snapshot with the tree copied. Bound into a snapshot of its own
// instead, it cost a build for that launch and another one for the next (a host
// change to /etc/ssl: two snapshots built, the first pruned soon after).
func treeKey(kd *keyed, i int, e Entry, now time.Time) (digest, note string, err error) {
	if kd.idx != nil {
		r := kd.idx.tree(e.Source)
		return r.Digest, r.Note, nil
	}
	if kd.walked == nil {
		kd.walked = make([]*tree, len(kd.entries))
		kd.trees = make([]*tree, len(kd.entries))
		kd.record = make([]indexTree, len(kd.entries))
	}
	t, err := walkTree(e.Source, now)
	if errors.Is(err, ErrRacy) || errors.Is(err, ErrChanged) {
		return "", "", err
	}
	kd.walked[i] = t
	if err != nil {
		note = describe(e.Source, err)
	} else {
		kd.trees[i] = t
		sum := sha256.Sum256(appendTree(nil, e.Name, t))
		digest = hex.EncodeToString(sum[:16])
	}
	if t != nil {
		kd.record[i] = indexTree{Source: e.Source, Seen: t.seen, Digest: digest, Note: note}
	}
	return digest, note, nil
}

// appendStamp appends the key's line for a copied file e with stamp s:
// "%q %q %d %d %o %d %d.%09d %d.%09d\n" of its name, source, device, inode, mode,
// size, mtime and ctime.
func appendStamp(b []byte, e Entry, s stamp) []byte {
	b = strconv.AppendQuote(b, e.Name)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, e.Source)
	return appendStampTail(b, s)
}

// appendStampTail appends " %d %d %o %d %d.%09d %d.%09d\n" of s's device, inode,
// mode, size, mtime and ctime.
func appendStampTail(b []byte, s stamp) []byte {
	b = append(b, ' ')
	b = strconv.AppendUint(b, s.dev, 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, s.ino, 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(s.mode), 8)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.size, 10)
	for _, t := range []unix.Timespec{s.mtime, s.ctime} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, t.Sec, 10)
		b = append(b, '.')
		b = appendNsec(b, t.Nsec)
	}
	return append(b, '\n')
}

// appendNsec appends n as %09d does.
func appendNsec(b []byte, n int64) []byte {
	if n < 0 { // never from stat(2)
		return fmt.Appendf(b, "%09d", n)
	}
	var d [20]byte
	digits := strconv.AppendInt(d[:0], n, 10)
	for i := len(digits); i < 9; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// racy reports whether s changed so recently (or, with a clock set back, in the
// future) that another change in the same tick could leave it as it is.
func racy(s stamp, now time.Time) bool {
	for _, t := range []unix.Timespec{s.mtime, s.ctime} {
		if now.Sub(time.Unix(t.Sec, t.Nsec)) < racyWindow {
			return true
		}
	}
	return false
}
