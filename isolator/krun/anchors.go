package krun

import (
	"github.com/devsandbox/devsandbox/isolator"
)

// AnchorArg is devsandbox-krun's argument for the role that stages anchors inside
// podman's namespaces (StageAnchors):
//
//	nsenter --user=... --mount=... --preserve-credentials -- devsandbox-krun stage-anchors
const AnchorArg = "stage-anchors"

// Anchor is a directory to bind in podman's mount namespace: an anchor of the Plan
// (isolator.Mount.Anchor), the identity it was pinned with, and the empty directory
// (under $XDG_RUNTIME_DIR, which no sandbox sees) where it is bound there.
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
