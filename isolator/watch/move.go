package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirfile"
	"github.com/devsandbox/devsandbox/isolator"
)

// errOutside is the error for a path the watch will not act on: one outside the
// directories it watches, or reached through a symlink or a non-directory below them.
var errOutside = errors.New("not reachable inside the watched directories without a symlink")

// roots are the directories the watch acts in: the project and the git dirs the
// planner found outside it (a linked worktree's, a submodule's). They are the host's
// own paths, resolved at launch; everything below them may be the sandbox's.
func (w *Watcher) roots() []string {
	out := []string{w.p.Project.Dir}
	for _, d := range w.p.Git.Dirs {
		if !isolator.Within(d, w.p.Project.Dir) {
			out = append(out, d)
		}
	}
	return out
}

// root returns the outermost root that holds p below it, "" when none does.
func (w *Watcher) root(p string) string {
	best := ""
	for _, r := range w.roots() {
		if p != r && isolator.Within(p, r) && (best == "" || len(r) < len(best)) {
			best = r
		}
	}
	return best
}

// linked reports whether p lies outside every root, or is reached from its root
// through a symlink (or a non-directory): the sandbox may have put one there, and
// neither the host's git nor the watch follows it.
func (w *Watcher) linked(p string) bool {
	r := w.root(filepath.Clean(p))
	if r == "" {
		return true
	}
	rel, _ := filepath.Rel(r, filepath.Dir(p))
	if rel == "." {
		return false
	}
	d := r
	for _, c := range strings.Split(rel, "/") {
		d = filepath.Join(d, c)
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return true
		}
	}
	return false
}

// openParent opens the directory holding p, reached from p's root one component at a
// time without following a symlink: what the sandbox swapped in on the way since p
// was checked fails the walk instead of leading it to a host directory. A symlink
// met on the way is returned as a *linkOnWay, holding its directory open.
func (w *Watcher) openParent(p string) (fd int, base string, err error) {
	p = filepath.Clean(p)
	r := w.root(p)
	if r == "" {
		return -1, "", fmt.Errorf("%s: %w", p, errOutside)
	}
	fd, err = unix.Open(r, dirFlags&^unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: r, Err: err}
	}
	rel, _ := filepath.Rel(r, filepath.Dir(p))
	d := r
	for _, c := range strings.Split(rel, "/") {
		if c == "." {
			continue
		}
		d = filepath.Join(d, c)
		next, err := unix.Openat(fd, c, dirFlags, 0)
		if err == nil {
			unix.Close(fd)
			fd = next
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, "", &linkOnWay{parent: fd, name: c, path: d}
		}
		unix.Close(fd)
		if errors.Is(err, unix.ENOENT) {
			return -1, "", &os.PathError{Op: "open", Path: d, Err: err}
		}
		return -1, "", fmt.Errorf("%s: %w (%s is not a directory)", p, errOutside, d)
	}
	return fd, filepath.Base(p), nil
}

// linkOnWay is a symlink below a root on the way to a path the watch acts on.
type linkOnWay struct {
	parent int // the directory holding it, open
	name   string
	path   string
}

func (l *linkOnWay) Error() string {
	return fmt.Sprintf("%s is a symlink: %v", l.path, errOutside)
}

func (l *linkOnWay) Unwrap() error { return errOutside }

// moveAside moves path into the run's quarantine directory, keeping its path below
// it, or, on another file system, aside to PATH.devsandbox-quarantine-N; then, when
// restore is not nil, writes restore at path (putBack; restoreErr says why it is not
// back, and extra where what took its name meanwhile was moved). It
// acts only through a descriptor on path's directory (openParent): never at a host
// path a symlink of the sandbox's names. When a symlink lies on the way (a git dir's
// hooks/ made a link to files the sandbox wrote elsewhere), the link is what the
// host's git would follow, and it is moved aside instead: via reports it.
func (w *Watcher) moveAside(path string, restore []byte) (m moved, err error) {
	parent, base, err := w.openParent(path)
	var l *linkOnWay
	if errors.As(err, &l) {
		defer unix.Close(l.parent)
		m.dest, err = w.moveOut(l.parent, l.name, l.path)
		m.via = l.path
		return m, err
	}
	if err != nil {
		return m, err
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return m, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	m.dest, err = w.moveOut(parent, base, path)
	if err != nil {
		return m, err
	}
	if restore != nil {
		m.extra, m.restoreErr = w.putBack(parent, base, path, restore)
		m.restored = m.restoreErr == nil
	}
	return m, nil
}

// moved is what moveAside did.
type moved struct {
	dest string // where path went
	via  string // the symlink on the way to path that was moved instead, if any
	// restored reports the previous version back at path; restoreErr why not.
	restored   bool
	restoreErr error
	extra      []string // where what took path's name before the put back went
}

// moveOut renames base in parent (which is path) away from the project.
func (w *Watcher) moveOut(parent int, base, path string) (string, error) {
	if w.p.Git.Quarantine != "" {
		dest := filepath.Join(w.p.Git.Quarantine, w.session(), strings.TrimPrefix(path, "/"))
		if _, err := os.Lstat(dest); err == nil {
			dest = fmt.Sprintf("%s.%d", dest, time.Now().UnixNano())
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o700); err == nil {
			if q, err := unix.Open(filepath.Dir(dest), dirFlags, 0); err == nil {
				err = unix.Renameat(parent, base, q, filepath.Base(dest))
				unix.Close(q)
				if err == nil {
					return dest, nil
				}
			}
		}
	}
	for i := 1; i < 1000; i++ {
		name := fmt.Sprintf("%s.devsandbox-quarantine-%d", base, i)
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			continue
		}
		// Never over a name taken since: another session of the project, ending at
		// the same time, may have just moved what the sandbox wrote there.
		err := renameNoReplace(parent, base, name)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", &os.LinkError{Op: "rename", Old: path, New: filepath.Join(filepath.Dir(path), name), Err: err}
		}
		return filepath.Join(filepath.Dir(path), name), nil
	}
	return "", fmt.Errorf("no free name to move %s aside", path)
}

// putBackTries bounds how often putBack moves out what took the name before it.
const putBackTries = 3

// putBack writes content as base in parent (which is path), once what was there has
// been moved out: a new file linked at the name, never renamed there from a name the
// sandbox could have swapped (dirfile.LinkAt), and never over a file. What took the
// name in between (a sandbox writing there, told by inotify that it was moved) is
// moved out too (extra), and a temporary name swapped (dirfile.ErrSwapped) tried
// again, a few times; then putBack gives up, the name left empty.
func (w *Watcher) putBack(parent int, base, path string, content []byte) (extra []string, err error) {
	for i := 1; ; i++ {
		err := dirfile.LinkAt(parent, base, content, 0o644)
		switch {
		case errors.Is(err, fs.ErrExist):
			dest, err := w.moveOut(parent, base, path)
			if err != nil {
				return extra, fmt.Errorf("moving out what took its name: %w", err)
			}
			extra = append(extra, dest)
		case errors.Is(err, dirfile.ErrSwapped):
		default:
			return extra, err
		}
		if i == putBackTries {
			return extra, fmt.Errorf("%d tries: %w", putBackTries, err)
		}
	}
}

// pinDir opens the directory p, reached from its root without following a symlink,
// and returns the path the checker reads it through: the descriptor's (fdDir) where
// the system has one, else p itself when no symlink lies on the way now. ok is false
// when p is gone or lies behind a symlink.
func (w *Watcher) pinDir(p string) (dir string, release func(), ok bool) {
	p = filepath.Clean(p)
	var fd int
	var err error
	if slices.Contains(w.roots(), p) {
		fd, err = unix.Open(p, dirFlags&^unix.O_NOFOLLOW, 0)
	} else {
		parent, base, perr := w.openParent(p)
		var l *linkOnWay
		if errors.As(perr, &l) {
			unix.Close(l.parent)
		}
		if perr != nil {
			return "", nil, false
		}
		fd, err = unix.Openat(parent, base, dirFlags, 0)
		unix.Close(parent)
	}
	if err != nil {
		return "", nil, false
	}
	if d, ok := fdDir(fd); ok {
		return d, func() { unix.Close(fd) }, true
	}
	unix.Close(fd)
	return p, func() {}, !w.linked(p)
}
