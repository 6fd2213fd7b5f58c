// Package imageuse records when a run last used an engine's image, and decides from
// that record whether `sandboxes prune` may remove an image another devsandbox build
// (or a configuration no run has now) may still use.
//
// A record is an empty file in the user's state, $XDG_STATE_HOME/devsandbox/image-use/
// ENGINE-ID, whose modification time is the last use: a run sets it (one utimensat(2)
// once the file exists), prune reads it (one lstat(2)). ENGINE is the kind of engine
// ("docker", "podman"), not its address: one engine is reached by several addresses, and
// an image ID names the image's content (the digest of its config), so a use of an ID on
// one engine keeps that ID on any: the record errs towards keeping. The directory is the
// user's, outside everything a sandbox can write (the project's state directory holds the
// session /tmp; this is beside it, as the derived-image cache is): a sandbox can neither
// keep an image alive nor make one look unused. Only the user's own runs write there:
// another user's runs on the same engine leave their records in their own state, which
// prune does not see (see Decide's callers for what that leaves).
package imageuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Dir is the records' directory in devsandbox's state directory.
const Dir = "image-use"

// Engines whose images are recorded.
const (
	Docker = "docker"
	Podman = "podman"
)

// Path is the record of image id (with or without "sha256:") on engine kind engine,
// in devsandbox's state directory stateRoot; "" when id is not an image ID (letters
// and digits: the engines' are hex).
func Path(stateRoot, engine, id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if !alnum(id) || !alnum(engine) {
		return ""
	}
	return filepath.Join(stateRoot, Dir, engine+"-"+id)
}

// Record sets the last use of image id on engine to now. The file exists after the
// image's first use: then it is a single utimensat(2).
func Record(stateRoot, engine, id string, now time.Time) error {
	p := Path(stateRoot, engine, id)
	if p == "" {
		return fmt.Errorf("recording the use of image %q: not an image ID", id)
	}
	err := os.Chtimes(p, now, now)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("recording the use of image %s: %w", id, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: a planted link is not followed
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("recording the use of image %s: %w", id, err)
	}
	if f != nil {
		_ = f.Close()
	}
	return os.Chtimes(p, now, now)
}

// Last is the last recorded use of image id on engine, or the zero time when none is
// recorded (or the record is not a regular file).
func Last(stateRoot, engine, id string) time.Time {
	p := Path(stateRoot, engine, id)
	if p == "" {
		return time.Time{}
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return time.Time{}
	}
	return fi.ModTime()
}

// Forget removes the record of image id on engine (the image was removed).
func Forget(stateRoot, engine, id string) {
	if p := Path(stateRoot, engine, id); p != "" {
		_ = os.Remove(p)
	}
}

// alnum says whether s is a non-empty run of ASCII letters and digits.
func alnum(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return s != ""
}
