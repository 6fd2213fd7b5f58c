package etcsnap

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// staleTmp is the age after which a temporary build directory is a crashed build's.
const staleTmp = time.Hour

// Prune removes the snapshots under root beyond the keep newest, except those a
// running sandbox holds, and what crashed builds left. With dryRun it only lists
// them. It returns the paths removed (or that would be). A missing root is empty.
func Prune(root string, keep int, dryRun bool) ([]string, error) {
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	var out []string
	for _, n := range candidates(rfd, keep, "", time.Now()) {
		if dryRun {
			if !inUse(rfd, n) {
				out = append(out, filepath.Join(root, n))
			}
			continue
		}
		if discard(rfd, n) {
			out = append(out, filepath.Join(root, n))
		}
	}
	return out, nil
}

// prune is Prune after a build: except is the snapshot just built.
func prune(rfd int, keep int, except string, now time.Time) {
	for _, n := range candidates(rfd, keep, except, now) {
		discard(rfd, n)
	}
}

// candidates lists what pruning removes under rfd: snapshots beyond the keep newest
// (by the time they were sealed; except counts as the newest), old temporary build
// directories and leftovers of an interrupted prune. Names devsandbox does not make
// are left alone.
func candidates(rfd int, keep int, except string, now time.Time) []string {
	names, err := readNames(rfd)
	if err != nil {
		return nil
	}
	type snap struct {
		name  string
		ctime int64
	}
	var snaps []snap
	var out, indexes []string
	for _, n := range names {
		var st unix.Stat_t
		if n == except || unix.Fstatat(rfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(n, trashPrefix):
			out = append(out, n)
		case strings.HasPrefix(n, tmpPrefix):
			if now.Sub(time.Unix(st.Mtim.Sec, st.Mtim.Nsec)) > staleTmp {
				out = append(out, n)
			}
		case isKey(n):
			snaps = append(snaps, snap{n, st.Ctim.Nano()})
		case strings.HasPrefix(n, indexPrefix) && st.Mode&unix.S_IFMT == unix.S_IFREG:
			indexes = append(indexes, n)
		}
	}
	sort.Slice(snaps, func(i, j int) bool { // newest first; ties (one clock tick) by name, to be deterministic
		if snaps[i].ctime != snaps[j].ctime {
			return snaps[i].ctime > snaps[j].ctime
		}
		return snaps[i].name > snaps[j].name
	})
	if except != "" {
		keep--
	}
	kept := map[string]bool{except: except != ""}
	for i, s := range snaps {
		if i >= keep {
			out = append(out, s.name)
		} else {
			kept[s.name] = true
		}
	}
	// An index of trees answers only for the snapshot it last checked them in: once
	// that is gone (or the index cannot be read), the index is a leftover.
	for _, n := range indexes {
		if k := indexKey(rfd, n); k == "" || !kept[k] {
			out = append(out, n)
		}
	}
	return out
}

// indexKey is the snapshot the index n under rfd was last checked in; "" when it
// cannot be read as an index.
func indexKey(rfd int, n string) string {
	fd, err := unix.Openat(rfd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	f := os.NewFile(uintptr(fd), n)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIndex))
	if err != nil {
		return ""
	}
	idx, err := parseIndex(string(data))
	if err != nil || !isKey(idx.Key) {
		return ""
	}
	return idx.Key
}

func isKey(n string) bool {
	if len(n) != 32 {
		return false
	}
	for _, c := range n {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// inUse reports whether a run holds the snapshot n.
func inUse(rfd int, n string) bool {
	fd, err := unix.Openat(rfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil
}

// discard removes the entry n of rfd unless a run holds it: a link or a file is
// unlinked (never followed); a directory is locked exclusively, renamed out of the
// way, so no launch opens it any more, and removed. It reports whether n went.
func discard(rfd int, n string) bool {
	fd, err := unix.Openat(rfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return unix.Unlinkat(rfd, n, 0) == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	var st, named unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Fstatat(rfd, n, &named, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		st.Dev != named.Dev || st.Ino != named.Ino {
		return false
	}
	trash := n
	if !strings.HasPrefix(n, trashPrefix) && !strings.HasPrefix(n, tmpPrefix) {
		trash = trashPrefix + randomName()
		if unix.Renameat2(rfd, n, rfd, trash, unix.RENAME_NOREPLACE) != nil {
			return false
		}
	}
	return removeAt(rfd, trash) == nil
}

// removeAt removes n under pfd and, when it is a directory, everything in it, opening
// each directory without following a link: a link is removed itself, wherever it
// points. Sealed (0555) directories are made writable first.
func removeAt(pfd int, n string) error {
	err := unix.Unlinkat(pfd, n, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(pfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		// A directory of mode 0000 (one the user could not list in a tree): made
		// listable through a descriptor of it, never through a link.
		if err := chmodDir(pfd, n, 0o700); err != nil {
			return err
		}
		fd, err = unix.Openat(pfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), n)
	defer d.Close()
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, c := range names {
		if err := removeAt(fd, c); err != nil {
			return err
		}
	}
	return unix.Unlinkat(pfd, n, unix.AT_REMOVEDIR)
}

// chmodDir sets the mode of the directory n under pfd, which it may not be able to
// open for reading: through an O_PATH descriptor of it (not following a link).
func chmodDir(pfd int, n string, mode uint32) error {
	fd, err := unix.Openat(pfd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0)
}
