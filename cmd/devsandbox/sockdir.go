package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// longestSocketName is the longest path a session adds below the socket directory.
const longestSocketName = len("/publish-0123456789ab/65535.sock")

// socketDirRecord is the file in the project's state directory that names the socket
// directory made in the shared temporary directory, so every session finds it.
const socketDirRecord = "sock-dir"

// socketDir returns the project's private directory for its sessions' Unix sockets
// (the proxy's, the published ports'), made mode 0700 as needed. Unix socket paths are
// limited to 107 bytes, so it is the first of these whose longest socket path fits:
//
//   - $XDG_RUNTIME_DIR/devsandbox/<id>, when XDG_RUNTIME_DIR is a directory of the
//     user's that only the user can enter;
//   - <state dir>/sock;
//   - a directory made by mkdtemp in the temporary directory ($TMPDIR, else /tmp) as
//     devsandbox-<uid>-XXXXXXXX, its path recorded in the state directory for the next
//     sessions. The temporary directory and every directory above it must belong to
//     root or the user, and be writable by others only when sticky: then nobody else
//     can create, rename or replace what devsandbox made there.
//
// Every directory of the path that devsandbox did not create is checked with Lstat
// (owner, mode, not a symlink) before use; one that another user owns or can write
// is never used. The directory is per project: a kept container binds it whole as
// the project's stable proxy endpoint.
func socketDir(h config.Host, p *isolator.Plan) (string, error) {
	fits := func(s string) bool { return len(s)+longestSocketName < 100 }
	if h.RuntimeDir != "" && filepath.IsAbs(h.RuntimeDir) {
		s := filepath.Join(h.RuntimeDir, "devsandbox", p.Project.ID)
		if fits(s) && checkPrivate(h.RuntimeDir, h.UID) == nil {
			return s, ensurePrivate(h.RuntimeDir, []string{"devsandbox", p.Project.ID}, h.UID)
		}
	}
	if s := filepath.Join(p.StateDir, "sock"); fits(s) {
		if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
			return "", socketDirError(err)
		}
		return s, ensurePrivate(p.StateDir, []string{"sock"}, h.UID)
	}
	tmp := "/tmp"
	if t := h.Vars["TMPDIR"]; filepath.IsAbs(t) {
		tmp = t
	}
	return tempSocketDir(p.StateDir, tmp, h.UID, fits)
}

func socketDirError(err error) error {
	return fmt.Errorf("%w: the session sockets' directory: %v; set XDG_RUNTIME_DIR to a directory only you can enter (mode 0700)", isolator.ErrProtection, err)
}

// ensurePrivate makes base/names[0]/names[1]/…, creating each missing directory with
// mode 0700 and checking each with Lstat: a directory, not a symlink, owned by uid; an
// existing one of uid's that others may enter is made 0700. base is trusted as it is.
func ensurePrivate(base string, names []string, uid int) error {
	dir := base
	for _, n := range names {
		dir = filepath.Join(dir, n)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return socketDirError(err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return socketDirError(err)
		}
		if err := owned(dir, fi, uid); err != nil {
			return socketDirError(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return socketDirError(err)
			}
		}
	}
	return nil
}

// owned checks that fi (dir's Lstat) is a directory, not a symlink, owned by uid.
func owned(dir string, fi fs.FileInfo, uid int) error {
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	if o := owner(fi); o != uid {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d)", dir, o, uid)
	}
	return nil
}

// checkPrivate checks that dir is a directory of uid's that nobody else can enter.
func checkPrivate(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := owned(dir, fi, uid); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %v: others may enter it", dir, fi.Mode().Perm())
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// tempSocketDir returns the project's socket directory in the shared directory tmp:
// the one recorded in stateDir when it is still a private directory of uid's there,
// else a new one from mkdtemp, recorded.
func tempSocketDir(stateDir, tmp string, uid int, fits func(string) bool) (string, error) {
	shared, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		return "", socketDirError(err)
	}
	if err := checkAncestors(shared, uid); err != nil {
		return "", socketDirError(fmt.Errorf("the temporary directory %s cannot hold private sockets: %w", tmp, err))
	}
	prefix := "devsandbox-" + strconv.Itoa(uid) + "-"
	record := filepath.Join(stateDir, socketDirRecord)
	if b, err := os.ReadFile(record); err == nil {
		d := strings.TrimSpace(string(b))
		if filepath.Dir(d) == shared && strings.HasPrefix(filepath.Base(d), prefix) && checkPrivate(d, uid) == nil {
			return d, nil
		}
	}
	d, err := os.MkdirTemp(shared, prefix)
	if err != nil {
		return "", socketDirError(err)
	}
	if !fits(d) {
		os.Remove(d)
		return "", socketDirError(fmt.Errorf("%s is too long for Unix socket paths", d))
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", socketDirError(err)
	}
	tmpRecord := record + ".tmp"
	if err := os.WriteFile(tmpRecord, []byte(d+"\n"), 0o600); err != nil {
		return "", socketDirError(err)
	}
	if err := os.Rename(tmpRecord, record); err != nil {
		return "", socketDirError(err)
	}
	return d, nil
}

// checkAncestors checks dir and every directory above it with Lstat: each belongs to
// root or uid, and one that others may write has the sticky bit (so nobody but an
// entry's owner can rename or remove it). dir has no symlink in it.
func checkAncestors(dir string, uid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
		if o := owner(fi); o != 0 && o != uid {
			return fmt.Errorf("%s belongs to uid %d", d, o)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%s is writable by others and not sticky (mode %v)", d, fi.Mode())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
