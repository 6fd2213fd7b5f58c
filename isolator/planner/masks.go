package planner

import (
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/maskscan"
)

// maskMatcher decides which project files are masked.
type maskMatcher struct {
	mask, allow, skip []string
}

// findMasked returns the project paths to mask: the entries whose base name matches
// the mask globs (scanned without a cache), in path order. See findMaskedCached.
func findMasked(pr Probe, root string, m maskMatcher) ([]string, error) {
	s, err := findMaskedCached(pr, root, m, "", false, isolator.SubdirFiles{})
	return s.masked, err
}

// scanned is what the project scan found.
type scanned struct {
	masked []string // the paths to mask
	nested []string // the .git entries below the project, its own excepted
	subdir []string // the files host tools read in every directory (sub.Covers)
}

// findMaskedCached scans root with maskscan (which re-reads only directories changed
// since the cached scan, so launch does not grow with project size and a file created
// on the host since the last run is still found). Directories named in skip are not
// entered; symlinks are not followed. A matching symlink is masked through its target
// when that is a regular file in the project (anything outside is not visible anyway).
// The same walk returns the .git entries below root (nested repositories, gitdir
// files), root's own excepted, and the entries sub covers.
func findMaskedCached(pr Probe, root string, m maskMatcher, cacheFile string, store bool, sub isolator.SubdirFiles) (scanned, error) {
	scan := pr.ScanMasks
	if scan == nil {
		scan = maskscan.Scan
		if !store {
			scan = maskscan.ScanReadOnly
		}
	}
	matches, err := scan(root, maskscan.Matcher{Mask: m.mask, Allow: m.allow, Skip: m.skip, Mark: sub.ScanMarks()}, cacheFile)
	if err != nil {
		return scanned{}, err
	}
	var s scanned
	for _, mt := range matches {
		switch {
		case !mt.Marked:
		case filepath.Base(mt.Path) == ".git":
			if mt.Path != filepath.Join(root, ".git") {
				s.nested = append(s.nested, mt.Path)
			}
		case sub.Covers(root, mt.Path):
			s.subdir = append(s.subdir, mt.Path)
		}
		switch {
		case !mt.Masked:
		case !mt.Symlink:
			s.masked = append(s.masked, mt.Path)
		default:
			t, err := pr.EvalSymlinks(mt.Path)
			if err != nil || !isolator.Within(t, root) {
				continue
			}
			if fi, err := pr.Stat(t); err == nil && fi.Mode().IsRegular() {
				s.masked = append(s.masked, t)
			}
		}
	}
	return s, nil
}

// refuseLinked refuses a masked file with more than one link: the mask covers one
// name, and another name of the same file would show what it hides (a sandboxed
// program can link a file it made under a name the user will later write a secret
// to). The other name is looked for below roots (the project, the sandbox home), in
// that error only.
func refuseLinked(pr Probe, files []string, roots ...string) error {
	for _, f := range files {
		if n, where := linkedElsewhere(pr, f, roots); n > 1 {
			return fmt.Errorf("%w: %s, which sandbox.mask_files masks, has %d links (another: %s); a mask hides one name only, so the sandbox would read it through the other. If you made the link, replace it with a copy; else remove the other link (a sandboxed program may have made it to read what you write there) and review it", isolator.ErrProtection, f, n, where)
		}
	}
	return nil
}

// refuseLinkedProtected refuses a file host tools run (protectProject, protectSubdir)
// with more than one link: its read-only bind covers one name, and the sandbox would
// rewrite it through the other, which nothing watches (a sandboxed program can create
// the file as a link of one it made). A sandbox cannot link a protected file later: a
// link across mounts fails (EXDEV).
func refuseLinkedProtected(pr Probe, f string, roots ...string) error {
	if n, where := linkedElsewhere(pr, f, roots); n > 1 {
		return fmt.Errorf("%w: %s, a file tools on the host run, has %d links (another: %s); it is read-only in the sandbox under one name only, so the sandbox could rewrite it through the other. If you made the link, replace it with a copy; else remove the other link (a sandboxed program may have made it) and review the file", isolator.ErrProtection, f, n, where)
	}
	return nil
}

// linkedElsewhere returns how many links the regular file f has and, when more than
// one, another of them below roots (or where it is not).
func linkedElsewhere(pr Probe, f string, roots []string) (uint64, string) {
	fi, err := pr.Lstat(f)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink <= 1 {
		return 0, ""
	}
	where := "outside the project and the sandbox home"
	if other := findLink(pr, f, uint64(st.Dev), uint64(st.Ino), roots); other != "" {
		where = other
	}
	return uint64(st.Nlink), where
}

// findLink returns another path below roots of the file (dev, ino) than f, or "".
// The walk does not follow symlinks and gives up after maxLinkSearch entries.
func findLink(pr Probe, f string, dev, ino uint64, roots []string) string {
	seen := 0
	var walk func(dir string) string
	walk = func(dir string) string {
		ents, err := pr.ReadDir(dir)
		if err != nil {
			return ""
		}
		for _, e := range ents {
			if seen++; seen > maxLinkSearch {
				return ""
			}
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if found := walk(p); found != "" {
					return found
				}
			case e.Type().IsRegular() && p != f:
				if fi, err := pr.Lstat(p); err == nil {
					if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino {
						return p
					}
				}
			}
		}
		return ""
	}
	for _, r := range roots {
		if found := walk(r); found != "" {
			return found
		}
	}
	return ""
}

// maxLinkSearch bounds the search for another link (a slow path: refusing the run).
const maxLinkSearch = 500000
