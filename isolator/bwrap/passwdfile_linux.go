package bwrap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
)

// PasswdFile returns where PrepareHost writes the plan's SystemView.Passwd for
// WrapArgv, which binds it by path at /etc/passwd: a file named by its content's
// hash in the project's state directory, outside every sandbox's view, so runs with
// different homes each have theirs and none can change another's.
func PasswdFile(p *isolator.Plan) (string, error) {
	if p.StateDir == "" {
		return "", errors.New("the plan has no state directory to keep its /etc/passwd in (Plan.StateDir)")
	}
	sum := sha256.Sum256(p.System.Passwd)
	return filepath.Join(p.StateDir, "passwd", hex.EncodeToString(sum[:16])), nil
}

// writePasswdFile writes p's SystemView.Passwd to PasswdFile, read-only, unless the
// file there holds it already, whose modification time is then set to now; a file of
// other content there (not one devsandbox wrote) is replaced by rename, never written
// through. Each new copy removes the copies no PrepareHost wrote or found for
// copyMaxAge (prunePasswdFiles): one per distinct content (a harness giving every
// session a HOME of its own makes one each) would otherwise stay until the project's
// state is removed.
func writePasswdFile(p *isolator.Plan, now time.Time) error {
	if p.System.Passwd == nil {
		return nil
	}
	path, err := PasswdFile(p)
	if err != nil {
		return err
	}
	if b, err := rawfile.ReadRegular(path, int64(len(p.System.Passwd))+1, false); err == nil && bytes.Equal(b, p.System.Passwd) {
		ts := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("marking the sandbox's /etc/passwd %s as in use: %w", path, err)
		}
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s for the sandbox's /etc/passwd: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("writing the sandbox's /etc/passwd in %s: %w", dir, err)
	}
	_, err = f.Write(p.System.Passwd)
	if err == nil {
		err = f.Chmod(0o444)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing the sandbox's /etc/passwd to %s: %w", path, err)
	}
	prunePasswdFiles(dir, filepath.Base(path), now.Add(-copyMaxAge))
	return nil
}

// copyMaxAge is how long a passwd copy is kept after the last PrepareHost that wrote
// or found it: the session directories' orphan age. A command line WrapArgv returned
// names its copy by path and bubblewrap opens it when the command starts: a harness
// starting one later than that calls PrepareHost again first (the copy is bound at the
// start; removing it later does not touch a running sandbox).
const copyMaxAge = tmpdir.MaxAge

// prunePasswdFiles removes from dir (PasswdFile's directory, the project's state, no
// sandbox's) the copies and the temporary files of a failed write last modified
// before cutoff, except keep. Names it did not make are left; nothing is followed
// (a link of such a name is removed, not its target). Errors leave a file for the
// next time.
func prunePasswdFiles(dir, keep string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name == keep || !(isCopyName(name) || strings.HasPrefix(name, ".tmp-")) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || !fi.ModTime().Before(cutoff) {
			continue
		}
		_ = os.Remove(filepath.Join(dir, name))
	}
}

// isCopyName reports whether name is one PasswdFile gives: 32 lowercase hex digits.
func isCopyName(name string) bool {
	if len(name) != 32 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
