package krun

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/devsandbox/devsandbox/isolator"
)

// AnchorArg is devsandbox-krun's argument for the role that stages anchors inside
// podman's namespaces (StageAnchors):
//
//	nsenter --user=... --mount=... --preserve-credentials -- devsandbox-krun stage-anchors
const AnchorArg = "stage-anchors"

// Anchor is a file or directory to bind in podman's mount namespace: an anchor of
// the Plan (isolator.Mount.Anchor: a bind whose source a sandbox can swap), the
// identity it was pinned with, and the empty directory (under $XDG_RUNTIME_DIR,
// which no sandbox sees) where it is bound there (replaced by an empty file for a
// file).
type Anchor struct {
	Path  string          `json:"path"`
	ID    isolator.FileID `json:"id"`
	Stage string          `json:"stage"`
}

// anchorsOf lists p's anchors, pinned (their ID set by Host.Pin).
func anchorsOf(p *isolator.Plan) []Anchor {
	var out []Anchor
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && m.Anchor && m.ID != nil {
			out = append(out, Anchor{Path: m.Source, ID: *m.ID})
		}
	}
	return out
}

// readAnchors reads the stage-anchors role's request: one line, a JSON []Anchor,
// each with an absolute Path and Stage.
func readAnchors(r interface{ ReadBytes(byte) ([]byte, error) }) ([]Anchor, error) {
	line, err := r.ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, fmt.Errorf("reading the anchors: %w", err)
	}
	var as []Anchor
	if err := json.Unmarshal(line, &as); err != nil {
		return nil, fmt.Errorf("reading the anchors: %w", err)
	}
	for _, a := range as {
		if !filepath.IsAbs(a.Path) || !filepath.IsAbs(a.Stage) || a.ID.Ino == 0 {
			return nil, fmt.Errorf("reading the anchors: %q at %q (inode %d) is not an absolute path pinned", a.Path, a.Stage, a.ID.Ino)
		}
	}
	return as, nil
}

// samePinned refuses the file of device dev and inode ino, what a.Path leads to now, unless it is the file pinned.
func samePinned(a Anchor, dev, ino uint64) error {
	if dev != a.ID.Dev || ino != a.ID.Ino {
		return fmt.Errorf("%s is no longer the file devsandbox checked (device %d inode %d, now %d %d): something, such as a concurrent session of the project, replaced it", a.Path, a.ID.Dev, a.ID.Ino, dev, ino)
	}
	return nil
}

// stagePaths gives each anchor its mount point in podman's namespace, dir/<index>,
// and returns them by anchor path: what podman binds instead of the path.
func stagePaths(dir string, as []Anchor) map[string]string {
	staged := make(map[string]string, len(as))
	for i := range as {
		as[i].Stage = filepath.Join(dir, strconv.Itoa(i))
		staged[as[i].Path] = as[i].Stage
	}
	return staged
}
