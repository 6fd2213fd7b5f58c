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
	masked, _, err := findMaskedCached(pr, root, m, "", false)
	return masked, err
}

// findMaskedCached scans root with maskscan (which re-reads only directories changed
// since the cached scan, so launch does not grow with project size and a file created
// on the host since the last run is still found). Directories named in skip are not
// entered; symlinks are not followed. A matching symlink is masked through its target
// when that is a regular file in the project (anything outside is not visible anyway).
// The same walk returns the .git entries below root (nested repositories, gitdir
// files), root's own excepted.
func findMaskedCached(pr Probe, root string, m maskMatcher, cacheFile string, store bool) (masked, nested []string, err error) {
	scan := pr.ScanMasks
	if scan == nil {
		scan = maskscan.Scan
		if !store {
			scan = maskscan.ScanReadOnly
		}
	}
	matches, err := scan(root, maskscan.Matcher{Mask: m.mask, Allow: m.allow, Skip: m.skip, Mark: []string{".git"}}, cacheFile)
	if err != nil {
		return nil, nil, err
	}
	for _, mt := range matches {
		if mt.Marked && mt.Path != filepath.Join(root, ".git") {
			nested = append(nested, mt.Path)
		}
		switch {
		case !mt.Masked:
		case !mt.Symlink:
			masked = append(masked, mt.Path)
		default:
			t, err := pr.EvalSymlinks(mt.Path)
			if err != nil || !isolator.Within(t, root) {
				continue
			}
			if fi, err := pr.Stat(t); err == nil && fi.Mode().IsRegular() {
				masked = append(masked, t)
			}
		}
	}
	return masked, nested, nil
}

// refuseLinked refuses a masked file with more than one link: the mask covers one
// name, and another name of the same file would show what it hides (a sandboxed
// program can link a file it made under a name the user will later write a secret
// to). The other name is looked for below roots (the project, the sandbox home), in
// that error only.
func refuseLinked(pr Probe, files []string, roots ...string) error {
	for _, f := range files {
		fi, err := pr.Lstat(f)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Nlink <= 1 {
			continue
		}
		where := "outside the project and the sandbox home"
		if other := findLink(pr, f, uint64(st.Dev), uint64(st.Ino), roots); other != "" {
			where = other
		}
		return fmt.Errorf("%w: %s, which sandbox.mask_files masks, has %d links (another: %s); a mask hides one name only, so the sandbox would read it through the other. If you made the link, replace it with a copy; else remove the other link (a sandboxed program may have made it to read what you write there) and review it", isolator.ErrProtection, f, st.Nlink, where)
	}
	return nil
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
