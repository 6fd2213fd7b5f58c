// Package etcsnap keeps read-only snapshots of the small host files a bwrap sandbox
// sees in /etc (passwd, hosts, resolv.conf, ld.so.cache, ...), so that bwrap mounts
// one directory at /etc instead of copying each file from a descriptor: one bind
// costs bwrap a fraction of a millisecond, two dozen copies several.
//
// A snapshot is a directory under the root (Root: $XDG_STATE_HOME/devsandbox/etc),
// named by a key over what it holds: the entries' names and kinds, and for each copied
// file the identity and change times of its host source (see Key). A launch whose
// host files are unchanged reuses the snapshot; one whose files changed builds a new
// one beside it, in a private temporary directory renamed into place (so concurrent
// launches never see a half-built snapshot and never both win), and prunes the
// oldest ones nobody uses.
//
// Contracts:
//   - Every file is 0444 and every directory 0555, written with O_EXCL and O_NOFOLLOW
//     under a directory opened without following links; what is copied is read from
//     a descriptor whose identity matched the key before and after the read.
//   - A snapshot is used only when it is a real directory owned by the user, mode
//     0555, and each entry has the kind, mode and (for files) the size the key
//     describes; anything else is rebuilt or, if that fails, reported to the caller,
//     which copies the files one by one instead.
//   - A launch holds a shared lock on the snapshot directory for the life of the run;
//     pruning takes the exclusive lock without waiting and leaves a locked snapshot
//     alone, so no running sandbox sees its /etc emptied.
//   - Pruning renames a snapshot out of the way before removing it and never follows a
//     symbolic link: a link found where a snapshot should be is removed, not followed.
//
// Not guaranteed: the snapshot is as trustworthy as the state directory it lives in.
// The Plan builder refuses a project that contains devsandbox's state, and the
// renderer refuses a snapshot root inside anything the sandbox can write.
package etcsnap

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Entry is one name in a snapshot.
type Entry struct {
	// Name is the path inside the snapshot, relative and clean ("passwd",
	// "ld.so.conf.d/libc.conf").
	Name string
	// Source is the host file whose content is copied; "" for a mount point.
	Source string
	// Dir makes a mount point a directory (else an empty file); a copy is never one.
	Dir bool
	// Tree makes Source a host directory copied whole (see tree_linux.go) when it
	// can be; where it cannot, the snapshot holds a mount point for it instead
	// (Snapshot.Entries) and the caller binds Source there.
	Tree bool `json:",omitempty"`
	// Content, when not empty, is the file's content, given by the caller rather
	// than copied from the host (the sandbox's /etc/passwd, whose entry names the
	// command's home): the key holds its digest, so another content is another
	// snapshot. Such an entry has no Source and is neither Dir nor Tree.
	Content string `json:",omitempty"`
}

// ErrRacy is returned when a source changed so recently that a change within the same
// timestamp tick could go unseen by the key; the caller copies the files this once.
var ErrRacy = errors.New("a host file changed within the last seconds")

// ErrChanged is returned when a source changed while the snapshot was being built.
var ErrChanged = errors.New("a host file changed while it was copied")

// Validate checks that entries are relative, clean, unique and consistent (a name is
// never both a file and the directory of another). Parent directories are implied.
func Validate(entries []Entry) error {
	seen := make(map[string]bool, len(entries)) // name -> is a directory
	trees := map[string]bool{}
	for _, e := range entries {
		if e.Name == "" || e.Name == "." || path.IsAbs(e.Name) || path.Clean(e.Name) != e.Name || strings.HasPrefix(e.Name, "../") || e.Name == ".." {
			return fmt.Errorf("snapshot entry %q: not a clean relative path", e.Name)
		}
		if strings.HasPrefix(e.Name, ".") && !strings.Contains(e.Name, "/") && (strings.HasPrefix(e.Name, tmpPrefix) || strings.HasPrefix(e.Name, trashPrefix)) {
			return fmt.Errorf("snapshot entry %q: reserved name", e.Name)
		}
		if e.Source != "" && e.Dir {
			return fmt.Errorf("snapshot entry %q: a copied file cannot be a directory", e.Name)
		}
		if e.Tree && e.Source == "" {
			return fmt.Errorf("snapshot entry %q: a tree needs its host directory", e.Name)
		}
		if e.Content != "" && (e.Source != "" || e.Dir || e.Tree) {
			return fmt.Errorf("snapshot entry %q: a file of given content has no host source and is no directory", e.Name)
		}
		if _, dup := seen[e.Name]; dup {
			return fmt.Errorf("snapshot entry %q: listed twice", e.Name)
		}
		seen[e.Name] = e.Dir
		if e.Tree {
			trees[e.Name] = true
		}
	}
	for _, e := range entries {
		for d := path.Dir(e.Name); d != "."; d = path.Dir(d) {
			if isDir, ok := seen[d]; ok && !isDir {
				if trees[d] {
					return fmt.Errorf("snapshot entry %q: inside the tree %s", e.Name, d)
				}
				return fmt.Errorf("snapshot entry %q: its parent %s is a file", e.Name, d)
			}
		}
	}
	return nil
}

// dirs returns every directory a snapshot of entries holds, parents before children.
func dirs(entries []Entry) []string {
	set := map[string]bool{}
	for _, e := range entries {
		if e.Dir {
			set[e.Name] = true
		}
		for d := path.Dir(e.Name); d != "."; d = path.Dir(d) {
			set[d] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := strings.Count(out[i], "/"), strings.Count(out[j], "/"); a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// Keep is how many snapshots stay after a new one is built, and after `sandboxes
// prune`: the newest ones, plus any a running sandbox holds.
const Keep = 3

// Root is where the snapshots of a user whose devsandbox state lives in stateHome
// ($XDG_STATE_HOME) are kept: beside the per-project state directories, never in
// one (a project's session /tmp lives there and is the sandbox's /tmp), and under a
// name without a dash, which `sandboxes list` would take for a project.
func Root(stateHome string) string { return filepath.Join(stateHome, "devsandbox", "etc") }

// Path returns where the snapshot named key lives under root.
func Path(root, key string) string { return filepath.Join(root, key) }

// MaxTreeEntries, MaxTreeStats and MaxTreeBytes bound a tree copied into a snapshot
// (Entry.Tree): its entries, its directories and files (a launch takes the stat of
// each to know the tree unchanged; links cost nothing), and the bytes of its files.
// A bigger one is bound instead: checking it at every launch would cost more than
// the bind.
const (
	MaxTreeEntries = 4096
	MaxTreeStats   = 256
	MaxTreeBytes   = 8 << 20
)

const (
	tmpPrefix   = ".tmp-"
	trashPrefix = ".trash-"
)
