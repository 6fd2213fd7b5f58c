// Package maskscan finds the files of a project tree whose base names are masked
// (secret files such as .env), on every launch, completely, in time that does not
// grow with the number of files.
//
// # Contract
//
// Scan reports every non-directory entry below root whose base name the Matcher
// masks, and every entry of any type whose base name Matcher.Mark names, sorted by
// path, as the tree is when Scan reads it. Directories are entered, and reported only
// for a mark, even when their name matches a mask. Directories named in Matcher.Skip
// are not entered; symbolic links are never followed, and a symlink with a masked name
// is reported with Symlink set (what it points to is the caller's decision). A
// directory that cannot be listed is skipped, except that the literal mask names
// (".env", not ".env.*") and literal marks are still looked up in a searchable
// (execute-only) one, since a sandboxed process can open those by name. Scan is not atomic: an entry
// created or removed while it runs may or may not be reported.
//
// # The cache
//
// With a cache file, Scan re-reads only the directories that changed since the last
// scan. The file holds the directory tree of the previous scan: for each directory,
// its identity (device, inode), its mtime and ctime in nanoseconds, the names of its
// subdirectories and the masked entries found in it. Creating, removing or renaming
// an entry updates the mtime and ctime of the directory holding it, so a directory
// whose identity and times are unchanged holds the same names as when it was read:
// its cached subdirectories and matches are reused without reading it. The ctime
// matters: a process can set a directory's mtime back, but not its ctime.
//
// A scan walks the cached tree top-down. A directory without subdirectories costs
// one fstatat relative to its parent's descriptor; one with subdirectories is opened
// (O_PATH) and fstat'ed, and serves as the parent of the next level. Every lookup is
// of one name relative to the parent's descriptor, with O_NOFOLLOW, so no path is
// walked twice and no symlink is crossed, even one that replaces a directory during
// the scan. A changed or new directory is read again (getdents) and its
// subdirectories are visited in turn, reusing the cache of those that did not change.
// A warm scan thus costs a system call per directory and nothing per file; the walk
// runs on a few goroutines, as it is bound by system-call latency. A full walk reads
// the same way, and makes strings only of the names it keeps.
//
// Racy directories. Timestamps have a granularity (a clock tick; seconds on some
// filesystems), so a directory changed in the same tick as the scan that read it can
// keep the timestamps that scan recorded. As with git's racy index entries, the
// cache records when the scan that wrote it started, and a directory whose mtime or
// ctime is not at least 2 s (margin) older than that is never trusted: the next scan
// reads it again. Once a later scan finds it settled, that scan rewrites the cache.
// A cache written while the clock was ahead is judged by the current time instead.
//
// The cache is rewritten, atomically (a 0600 temporary file renamed over it), only
// when a scan changed something in it; a scan that found nothing changed writes
// nothing. It is bound to the root and to the Matcher (both are stored in it and
// compared) and to its format version. A missing, foreign, truncated or corrupt
// cache (a CRC-32 covers it) is ignored and the tree is walked in full; errors
// writing it are ignored too. A cache is never wrong for being old: every entry is
// checked against the filesystem before it is used.
//
// # Not guaranteed
//
//   - Filesystems must update a directory's mtime or ctime when its entries change,
//     and keep its inode number stable. Local Linux filesystems do. NFS clients may
//     serve attributes up to their attribute-cache timeout (acdirmax) old, so a file
//     created on another NFS client may be missed for that long; overlayfs does not
//     reflect changes made directly to a lower layer.
//   - The timestamps of a network filesystem come from the server's clock; a skew
//     larger than the margin can defeat the racy check.
//   - The cache file must not be writable from inside the sandbox: it says which
//     directories hold no secret, so whoever can write it can hide one. Keep it with
//     the host's private state, never in the project or a sandbox-writable directory.
//   - In a directory that can be searched but not listed, masked entries with other
//     than the literal names, and its subdirectories, are not found.
//   - A directory moved within the project is read again in full at its new path.
//   - The walk and the cache above need Linux (getdents64, O_PATH). Elsewhere
//     (macOS) Scan lists every directory on every scan, with the same results and
//     errors, and ignores the cache file.
package maskscan

import (
	"cmp"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Matcher decides which entries Scan reports and which directories it enters. The
// globs use path.Match syntax and are matched against base names.
type Matcher struct {
	Mask  []string // an entry whose name matches one of these is masked...
	Allow []string // ...unless its name also matches one of these
	Skip  []string // directory names that are not entered
	// Mark are globs of names reported whatever the entry's type, directories
	// included (which are still entered unless Skip names them): nested .git
	// entries and the files host tools read in every directory (rust-toolchain),
	// found on the walk the masks need anyway. Only the marks without
	// metacharacters are looked up in a directory that cannot be listed.
	Mark []string
}

// Match is a reported entry: a masked one, or one Matcher.Mark names.
type Match struct {
	Path    string // absolute: root joined with the entry's path below it
	Symlink bool   // the entry is a symbolic link; Scan did not look where it points
	Masked  bool   // its name is masked (Mask and not Allow)
	Marked  bool   // its name is in Mark
}

// margin is how much older than the start of the scan that read a directory its
// timestamps must be for the cache to be trusted with it. It exceeds the timestamp
// granularity of the filesystems the sandbox runs on (2 s on FAT) plus some clock skew.
const margin = 2 * time.Second

// Scan returns every entry below root whose base name m masks, sorted by path.
// cacheFile holds the state of the previous scan of root; with "" the tree is walked
// in full and nothing is stored. Errors opening or reading root itself are returned,
// as are malformed globs and errors that may have hidden a masked entry (such as
// running out of file descriptors). A directory below root that cannot be read is
// skipped when it belongs to someone else (it cannot be read in the sandbox either);
// one of the scanning user's own fails the scan with ErrOwnUnreadable, since the
// sandbox, running as that user, could make it readable. The cache never makes Scan
// fail. With no mask globs and no marks, Scan reads nothing and returns nil.
func Scan(root string, m Matcher, cacheFile string) ([]Match, error) {
	s := scanner{now: time.Now, workers: defaultWorkers()}
	ms, _, err := s.scan(root, m, cacheFile)
	return ms, err
}

// ScanReadOnly is Scan that reads the cache file but never writes it (a --dry-run).
func ScanReadOnly(root string, m Matcher, cacheFile string) ([]Match, error) {
	s := scanner{now: time.Now, workers: defaultWorkers(), readOnly: true}
	ms, _, err := s.scan(root, m, cacheFile)
	return ms, err
}

// ErrOwnUnreadable is the error for a directory of the scanning user that the user
// cannot list: fix with chmod u+rx.
var ErrOwnUnreadable = errors.New("a directory you own is not readable (chmod u+rx it): it could hold a file to mask, and the sandbox could open it")

// defaultWorkers is how many goroutines walk the tree: a warm scan is bound by the
// latency of fstatat, which CPUs can overlap, but more than a few gain little.
func defaultWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// scanner holds what a scan depends on besides its arguments.
type scanner struct {
	now     func() time.Time
	workers int
	// restamp, when set, rewrites every stamp read from the filesystem. Tests use it
	// to simulate timestamps too coarse to tell two changes apart.
	restamp func(*stamp)
	// readOnly leaves the cache file as it is.
	readOnly bool
}

// stats tell what a scan did, for tests.
type stats struct {
	reads int  // directories listed
	wrote bool // the cache file was rewritten
}

func (s scanner) scan(root string, m Matcher, cacheFile string) ([]Match, stats, error) {
	mt, err := compile(m)
	if err != nil || len(mt.mask) == 0 && len(mt.mark.all) == 0 {
		return nil, stats{}, err
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, stats{}, err
	}
	key := m.key()
	// The start is taken before any directory is read: every read of this scan
	// happens after it, which is what the racy check needs.
	start := s.now().UnixNano()
	var tree *node
	if cacheFile != "" {
		tree = load(cacheFile, root, key, start)
	}
	w := &walk{m: mt, start: start, restamp: s.restamp}
	if tree, err = w.run(root, tree, max(s.workers, 1)); err != nil {
		return nil, stats{}, err
	}
	st := stats{reads: int(w.reads.Load())}
	if cacheFile != "" && !s.readOnly && w.dirty.Load() {
		// A cache that cannot be written costs time, not correctness.
		st.wrote = store(cacheFile, encode(root, key, start, tree)) == nil
	}
	return collect(root, tree, mt), st, nil
}

// collect lists the matches of tree, whose root directory is root, sorted by path.
func collect(root string, tree *node, m *matcher) []Match {
	var out []Match
	// dir is the path of n; appending to it may overwrite what a sibling appended,
	// which is done with by then.
	var visit func(n *node, dir []byte)
	visit = func(n *node, dir []byte) {
		for _, e := range n.matches {
			out = append(out, Match{Path: string(append(append(dir, '/'), e.name...)), Symlink: e.symlink, Masked: m.masked(e.name), Marked: m.marked(e.name)})
		}
		for _, k := range n.kids {
			visit(k, append(append(dir, '/'), k.name...))
		}
	}
	visit(tree, []byte(strings.TrimSuffix(root, "/")))
	slices.SortFunc(out, func(a, b Match) int { return cmp.Compare(a.Path, b.Path) })
	return out
}
