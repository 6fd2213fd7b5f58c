package sockdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The socket directories in $XDG_RUNTIME_DIR/devsandbox, one per project ever run
// there, outlive their projects unless something removes them (the runtime directory
// lasts as long as the user's login session, a desktop's for weeks): `sandboxes rm`
// removes a project's (RemoveRuntime) and `sandboxes prune` the orphans
// (PruneRuntime), as they do the temporary directory's, each only when nobody holds it
// (Hold) and no socket in it is served.

// RuntimeDir is project id's socket directory in runtime ($XDG_RUNTIME_DIR), as
// Choose picks it there.
func RuntimeDir(runtime, id string) string { return filepath.Join(runtime, "devsandbox", id) }

// runtimeParent returns runtime/devsandbox when runtime and it are private directories
// of uid's (Lstat: not links); ok is false, with no error, when either is missing.
func runtimeParent(runtime string, uid int) (parent string, ok bool, err error) {
	if runtime == "" || !filepath.IsAbs(runtime) {
		return "", false, nil
	}
	parent = filepath.Join(runtime, "devsandbox")
	for _, d := range []string{runtime, parent} {
		if err := checkPrivate(d, uid); errors.Is(err, os.ErrNotExist) {
			return "", false, nil
		} else if err != nil {
			return "", false, fmt.Errorf("%s is not a private directory of yours: %w", d, err)
		}
	}
	return parent, true, nil
}

// RemoveRuntime removes project id's socket directory in runtime ($XDG_RUNTIME_DIR)
// when it is a directory of uid's that nobody holds and no socket in it is served
// (ErrInUse otherwise), in a runtime/devsandbox that is uid's alone (else it is left,
// with an error). A link there is neither followed nor removed; none there is no
// error.
func RemoveRuntime(runtime, id string, uid int) error {
	parent, ok, err := runtimeParent(runtime, uid)
	if err != nil || !ok || !isProjectID(id) {
		return err
	}
	return removeUnheld(filepath.Join(parent, id), uid, time.Time{})
}

// isProjectID reports whether name is a project ID (8 hex digits), the name of a
// socket directory in runtime/devsandbox; krun's anchors-* directories there are
// PruneAnchors's.
func isProjectID(name string) bool {
	if len(name) != 8 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PruneRuntime removes the orphan socket directories in runtime/devsandbox
// ($XDG_RUNTIME_DIR) as pruneIn does: each a directory of uid's there named by a
// project ID (8 hex digits) that is not in keep (the IDs of the projects whose state
// is kept).
func PruneRuntime(runtime string, keep map[string]bool, uid int, now time.Time, dryRun bool) ([]string, error) {
	parent, ok, err := runtimeParent(runtime, uid)
	if err != nil || !ok {
		return nil, err
	}
	orphan := func(name string) bool { return isProjectID(name) && !keep[name] }
	return pruneIn(parent, orphan, uid, now, dryRun)
}
