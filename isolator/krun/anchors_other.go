//go:build !linux

package krun

import (
	"fmt"
	"io"

	"github.com/devsandbox/devsandbox/isolator"
)

// StageAnchors needs Linux.
func StageAnchors(io.Reader, io.Writer) int { return 2 }

// StageAnchors needs Linux: a plan with anchors fails.
func (osHost) StageAnchors(_, _ string, as []Anchor) (map[string]string, func(), error) {
	if len(as) == 0 {
		return map[string]string{}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("%w: %s holds a masked path, which krun binds only on Linux", isolator.ErrProtection, as[0].Path)
}
