package plan

import (
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
	return findMaskedCached(pr, root, m, "")
}

// findMaskedCached scans root with maskscan (which re-reads only directories changed
// since the cached scan, so launch does not grow with project size and a file created
// on the host since the last run is still found). Directories named in skip are not
// entered; symlinks are not followed. A matching symlink is masked through its target
// when that is a regular file in the project (anything outside is not visible anyway).
func findMaskedCached(pr Probe, root string, m maskMatcher, cacheFile string) ([]string, error) {
	scan := pr.ScanMasks
	if scan == nil {
		scan = maskscan.Scan
	}
	matches, err := scan(root, maskscan.Matcher{Mask: m.mask, Allow: m.allow, Skip: m.skip}, cacheFile)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mt := range matches {
		if !mt.Symlink {
			out = append(out, mt.Path)
			continue
		}
		t, err := pr.EvalSymlinks(mt.Path)
		if err != nil || !isolator.Within(t, root) {
			continue
		}
		if fi, err := pr.Stat(t); err == nil && fi.Mode().IsRegular() {
			out = append(out, t)
		}
	}
	return out, nil
}
