package sockdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// krun stages a session's anchors (binds whose source a sandbox could swap) in a
// directory of the session's own in $XDG_RUNTIME_DIR/devsandbox, anchors-<random>
// (MakeAnchors), which podman binds from. The session holds it as a session holds its
// socket directory (Hold: a shared flock on the directory for its whole life) and
// removes it at its end; one whose session died without that end (devsandbox-krun
// killed) is removed by `sandboxes prune` (PruneAnchors) once nobody holds it and it
// is over a minute old. Anchors directories are the session's, not a project's:
// `sandboxes rm` does not know them.

// anchorsPrefix begins the name of every anchors directory.
const anchorsPrefix = "anchors-"

// isAnchors reports whether name is an anchors directory's (anchorsPrefix and a
// non-empty rest, as os.MkdirTemp makes it). Pure.
func isAnchors(name string) bool {
	rest, ok := strings.CutPrefix(name, anchorsPrefix)
	return ok && rest != "" && !strings.ContainsAny(rest, "/\x00")
}

// MakeAnchors makes a new anchors directory in runtime/devsandbox (runtime is
// $XDG_RUNTIME_DIR, or where podman keeps its runtime files; devsandbox/ is made
// 0700 when missing) and holds it (as Hold) until release; the caller removes it before
// it releases it.
func MakeAnchors(runtime string) (dir string, release func(), err error) {
	base := filepath.Join(runtime, "devsandbox")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, err
	}
	if dir, err = os.MkdirTemp(base, anchorsPrefix); err != nil {
		return "", nil, err
	}
	if release, err = hold(dir); err != nil {
		os.Remove(dir)
		return "", nil, fmt.Errorf("holding the anchors directory: %w", err)
	}
	return dir, release, nil
}

// PruneAnchors removes the anchors directories in runtime/devsandbox that their
// sessions left (MakeAnchors), as pruneIn does: each a directory of uid's there (a
// link or another user's entry is never followed nor removed), older than a minute,
// that nobody holds; only when runtime and its devsandbox/ are private directories of
// uid's. With dryRun it removes nothing. It returns the directories it removed (or
// would).
func PruneAnchors(runtime string, uid int, now time.Time, dryRun bool) ([]string, error) {
	parent, ok, err := runtimeParent(runtime, uid)
	if err != nil || !ok {
		return nil, err
	}
	return pruneIn(parent, isAnchors, uid, now, dryRun)
}
