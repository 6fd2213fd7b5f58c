package isolator

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSpecialFile: the path is a FIFO, a socket or a device, which a file tool must not
// open: a FIFO the sandbox made would hold the harness's open or read until the
// sandbox chose to write to it.
var ErrSpecialFile = errors.New("not a regular file or directory")

// writeFlags are the open flags that need CheckWrite.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// Open checks name as CheckRead does (CheckWrite when flag opens for writing,
// creating, truncating or appending) and opens the host file backing it, so that what
// is opened is what was checked while the sandbox runs and changes the tree: the
// check and the open are one step. Use it, not HostPath and os.OpenFile, in a file
// tool.
//
// From the host directory that backs the deciding mount (or, where that lies below a
// directory the sandbox can write, the source of the outermost such mount: the
// project, the sandbox home, a rw bind, /tmp), Open walks one component at a time and
// follows no symlink: one there now, where the check resolved none, means the sandbox
// swapped the path meanwhile, and Open fails with ErrOutsideView. A component that is
// one of the view's masked files or directories under another name fails with
// ErrMasked: a hard link, a second bind, a name a case-insensitive file system folds
// onto it, or a directory holding it that the sandbox renamed (in its mount
// namespace a directory holding mount points may be renamed, and the mounts move
// with it, so the sandbox still cannot reach the file, but the host sees it under
// the new name). For writing, one a read-only bind holds (the hooks of a renamed
// .git) fails with ErrReadOnly. The identities are those ViewOf recorded. A FIFO,
// socket or device fails with ErrSpecialFile, without blocking. A mount's own host
// source is never created (an optional bind whose source was absent was not
// mounted: ErrOutsideView). O_TRUNC truncates only after these checks. flag and
// perm are as for os.OpenFile; O_NOFOLLOW and O_CLOEXEC are always added.
func (v *View) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	r, err := v.check(name, flag&writeFlags != 0)
	if err != nil {
		return nil, err
	}
	e := v.lookup(r)
	if e.source == "" {
		return nil, fmt.Errorf("%s: %w (%s)", r, ErrNoHostPath, e.why)
	}
	host := e.hostPath(r)
	anchor := v.anchor(e.source, host)
	f, err := v.openBeneath(anchor, host, r, flag, perm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path.Clean(name), err)
	}
	return f, nil
}

// anchor returns where Open starts its walk to host: the source of the outermost
// writable entry holding host (a directory the sandbox can change below), else src,
// the deciding entry's source. Nothing above an anchor is the sandbox's to change.
func (v *View) anchor(src, host string) string {
	a := src
	for _, e := range v.entries {
		if e.access == writable && e.source != "" && Within(host, e.source) && len(e.source) < len(a) {
			a = e.source
		}
	}
	return a
}

// guardIDs returns the identities of the host files the view protects: for each
// masked entry, the file that the mount it covers shows (the host's file the mask
// hides); for each read-only bind of the Plan's (roBinds: indexes into entries), its
// source. Those absent are left out.
func (v *View) guardIDs(roBinds []int) map[fileID]guard {
	ids := map[fileID]guard{}
	note := func(host string, e entry) {
		var st unix.Stat_t
		if unix.Lstat(host, &st) == nil {
			id := fileID{uint64(st.Dev), uint64(st.Ino)}
			if g, ok := ids[id]; ok && g.access == masked {
				return // a mask wins over a read-only bind of the same file
			}
			ids[id] = guard{target: e.target, access: e.access, what: e.target + " (" + e.why + ")"}
		}
	}
	for i, m := range v.entries {
		if m.access != masked || i == 0 {
			continue
		}
		// The entry the mask covers: the last one before it at or above its target.
		for j := i - 1; j >= 0; j-- {
			if under := v.entries[j]; Within(m.target, under.target) {
				if under.source != "" && under.access != masked {
					note(under.hostPath(m.target), m)
				}
				break
			}
		}
	}
	for _, i := range roBinds {
		note(v.entries[i].source, v.entries[i])
	}
	return ids
}

type fileID struct{ dev, ino uint64 }

// guard is a protected file: where the view protects it, how, and what to call it.
type guard struct {
	target string
	access access
	what   string
}

// guarded fails when st, met at the host path name on the way to the in-sandbox path
// r, is a file or directory a mask hides (any access) or a read-only bind holds (for
// writing), and r is not below that entry's target: there the check has already
// decided (a later mount shows what is below it).
func (v *View) guarded(st *unix.Stat_t, name, r string, write bool) error {
	g, ok := v.guards[fileID{uint64(st.Dev), uint64(st.Ino)}]
	if !ok || Within(r, g.target) {
		return nil
	}
	switch {
	case g.access == masked:
		return fmt.Errorf("%s is %s under another name: %w", name, g.what, ErrMasked)
	case write:
		return fmt.Errorf("%s is %s under another name: %w", name, g.what, ErrReadOnly)
	}
	return nil
}

// openBeneath opens host, the host path of the in-sandbox path r, at or below the
// directory anchor, following no symlink below anchor and refusing a masked file
// under another name.
func (v *View) openBeneath(anchor, host, r string, flag int, perm os.FileMode) (*os.File, error) {
	rel := strings.TrimPrefix(strings.TrimPrefix(host, anchor), "/")
	if host == anchor {
		rel = ""
	}
	write := flag&writeFlags != 0
	mode := uint32(perm.Perm())
	// The open itself never truncates: a file refused below must be left as it was.
	oflag := (flag &^ os.O_TRUNC) | unix.O_CLOEXEC | unix.O_NONBLOCK
	var fd int
	var err error
	if rel == "" {
		// A bind of a file, or a mount's own directory: a path the Plan chose. It is
		// never created: a source absent at launch was not mounted (an optional
		// bind), and the sandbox sees what is below it there, not this host file.
		fd, err = unix.Open(anchor, oflag&^(os.O_CREATE|os.O_EXCL), mode)
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%s, the mount's host source, does not exist, so the sandbox did not mount it: %w", anchor, ErrOutsideView)
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: anchor, Err: err}
		}
	} else {
		dir, err := unix.Open(anchor, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: anchor, Err: err}
		}
		parts := strings.Split(rel, "/")
		at := anchor
		for i, p := range parts {
			at += "/" + p
			last := i == len(parts)-1
			fl, m := unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(0)
			if last {
				fl, m = oflag|unix.O_NOFOLLOW, mode
			}
			next, oerr := unix.Openat(dir, p, fl, m)
			if oerr != nil {
				var st unix.Stat_t
				if unix.Fstatat(dir, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					oerr = fmt.Errorf("%s is a symlink the view did not resolve: the sandbox changed the path after the check: %w", at, ErrOutsideView)
				} else {
					oerr = &os.PathError{Op: "open", Path: at, Err: oerr}
				}
				_ = unix.Close(dir)
				return nil, oerr
			}
			_ = unix.Close(dir)
			dir = next
			if !last {
				if err := v.checkGuarded(dir, at, r, write); err != nil {
					_ = unix.Close(dir)
					return nil, err
				}
			}
		}
		fd = dir
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: host, Err: err}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", host, ErrSpecialFile)
	}
	if err := v.guarded(&st, host, r, write); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: host, Err: err}
	}
	f := os.NewFile(uintptr(fd), host)
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
		if err := f.Truncate(0); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checkGuarded fails when the directory open at fd is one the view protects (see
// guarded).
func (v *View) checkGuarded(fd int, name, r string, write bool) error {
	if len(v.guards) == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return v.guarded(&st, name, r, write)
}
