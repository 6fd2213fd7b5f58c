package planner

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// A mask is planned at a path; the sandbox must not be able to move what it hides to
// another name, where the next run's planner would not look. A mask is a mount, and
// a mount point cannot be renamed or removed (EBUSY), but a directory above it can:
// renaming ~/shared/secret moves the mask of ~/shared/secret/key along with it in
// the sandbox's namespace, and on the host the key is now at ~/shared/x/key. So every
// directory between a masked path and the writable bind it is seen through is bound
// onto itself first (an anchor): then no directory on the way can be renamed. Masks
// seen through a read-only bind, the sandbox home (its content is the sandbox's own)
// or a bind showing another host path need none.
//
// The files host tools run that the project scan finds below sub-directories
// (protectSubdir) are read-only binds anchored the same way, for the same reason.

// anchorFor returns the index in b.mounts of the mount p is seen through when that is
// a writable bind showing the host's p at p, else -1. A later mount at or above p
// covers an earlier one.
func (b *mountBuilder) anchorFor(p string) int {
	for i := len(b.mounts) - 1; i >= 0; i-- {
		m := b.mounts[i]
		t := m.Target(b.home)
		if !isolator.Within(p, t) {
			continue
		}
		if m.Kind != isolator.Bind || m.ReadOnly || m.Source != t || t == p {
			return -1
		}
		return i
	}
	return -1
}

// anchorChain returns the directories strictly between root and p, outermost first.
func anchorChain(root, p string) []string {
	var chain []string
	for d := filepath.Dir(p); d != root && isolator.Within(d, root) && d != "/"; d = filepath.Dir(d) {
		chain = append([]string{d}, chain...)
	}
	return chain
}

// anchor binds each directory between the writable bind p is seen through and p onto
// itself, right after that bind, so that every mount placed in it since (binds, other
// masks) stays on top. A directory anchored already is not bound again. key names the
// setting that masks p, for the error: a symlink on the way (a planner following it
// would mask or look for p elsewhere, e.g. a dangling link a sandbox left at a name
// it renamed) stops the run.
func (b *mountBuilder) anchor(p, key string, exists bool) error {
	i := b.anchorFor(p)
	if i < 0 {
		return nil
	}
	root := b.mounts[i].Source
	if q := isolator.SymlinkIn(p, root, b.pr.Lstat); q != "" && q != p {
		return fmt.Errorf("%w: %s is a symlink on the way to %s, which %s masks, inside the read-write %s (%s); a sandboxed program may have moved what the mask hid and left the link: look for it in %s, then replace the link with the directory (or remove %s from %s)",
			isolator.ErrProtection, q, p, key, b.mounts[i].Why, root, root, p, key)
	}
	if !exists {
		return nil
	}
	if b.anchored == nil {
		b.anchored = map[string]bool{}
	}
	var add []isolator.Mount
	for _, d := range anchorChain(root, p) {
		if b.anchored[d] {
			continue
		}
		if !b.pr.isDir(d) {
			break
		}
		b.anchored[d] = true
		add = append(add, isolator.Mount{Kind: isolator.Bind, Source: d, Dest: d, Why: anchorWhy, Anchor: true})
	}
	// After the bind and the anchors already in it, outermost first.
	for i+1 < len(b.mounts) && b.mounts[i+1].Why == anchorWhy && isolator.Within(b.mounts[i+1].Dest, root) {
		i++
	}
	b.insertAfter(i, add)
	return nil
}

// anchorInBind anchors, as anchor does, the directories between the destination of
// b.mounts[i], a user's read-write bind, and dst, a path below it, each bound from the
// host directory it shows: the bind may show its source at another path (--mount
// SRC:DST, host_mounts), which anchor, looking for a bind of the host's path at the
// same path, passes over. The chain is the bind's own real directories (its source
// and the protected path are resolved); a read-only bind needs none.
func (b *mountBuilder) anchorInBind(i int, dst string) {
	m := b.mounts[i]
	if m.Kind != isolator.Bind || m.ReadOnly {
		return
	}
	root := m.Target(b.home)
	if b.anchored == nil {
		b.anchored = map[string]bool{}
	}
	var add []isolator.Mount
	for _, d := range anchorChain(root, dst) {
		if b.anchored[d] {
			continue
		}
		src := filepath.Join(m.Source, strings.TrimPrefix(d, root+"/"))
		if !b.pr.isDir(src) {
			break
		}
		b.anchored[d] = true
		add = append(add, isolator.Mount{Kind: isolator.Bind, Source: src, Dest: d, Why: anchorWhy, Anchor: true})
	}
	// After the bind and the anchors already in it, outermost first.
	for i+1 < len(b.mounts) && b.mounts[i+1].Why == anchorWhy && isolator.Within(b.mounts[i+1].Dest, root) {
		i++
	}
	b.insertAfter(i, add)
}

// anchorWhy is an anchor's Why: it holds a mask, or a file host tools run (protectSubdir).
const anchorWhy = "holds a masked or protected path"

// insertAfter inserts ms into b.mounts after index i, keeping b.userBinds pointing at
// the same mounts.
func (b *mountBuilder) insertAfter(i int, ms []isolator.Mount) {
	if len(ms) == 0 {
		return
	}
	out := make([]isolator.Mount, 0, len(b.mounts)+len(ms))
	out = append(out, b.mounts[:i+1]...)
	out = append(out, ms...)
	b.mounts = append(out, b.mounts[i+1:]...)
	for j, u := range b.userBinds {
		if u > i {
			b.userBinds[j] = u + len(ms)
		}
	}
}

// anchorSwappable marks as an anchor (isolator.Mount.Anchor) every other bind whose
// source lies where a sandbox can write: below one of isolator.Writable's
// directories, the rule package pin refuses links by. A concurrent session with that
// directory writable can swap the source (or a directory above it) for a symlink
// while this run starts: an engine that binds it by path then mounts where the link
// leads, on the host — a host file at the read-only .git/config, the real one left
// writable under another name, a mask's mount point made through the link. The
// git metadata's read-only binds, the files host tools run, a
// sandbox.writable_dirs entry of a read-only project: a backend mounts each from
// the file it pinned (a descriptor), or delivers a read-only one's content, never
// its path.
func anchorSwappable(p *isolator.Plan) {
	roots := isolator.Writable(p)
	for i := range p.Mounts {
		c := &p.Mounts[i]
		if c.Kind != isolator.Bind || c.Anchor {
			continue
		}
		for _, r := range roots {
			if r != "" && c.Source != r && isolator.Within(c.Source, r) {
				c.Anchor = true
				break
			}
		}
	}
}
