package rmtree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
)

// RemoveAll removes p and everything below it, as os.RemoveAll does, without
// following a symlink (a link is removed, never what it names). A directory its
// owner may not list, search or write (000, 0500) gets its owner's rwx back first.
//
// The walk holds one descriptor of the tree at a time, whatever its depth: it goes
// down by opening a child from its parent's descriptor (O_NOFOLLOW) and back up by
// "..", checked to be the directory it came down from (device and inode), so a tree
// a sandbox nested deeper than the open-file limit is removed too (os.RemoveAll
// holds a descriptor per level and stops there with EMFILE). A directory moved while
// the walk is in it stops the walk with an error. A sandbox still running beside it
// can change what is removed, but not make it reach, chmod or remove anything
// outside p. What cannot be removed is left, and the first error returned names p
// and the entry's name, never the whole path below p (which a sandbox can make
// megabytes long).
func RemoveAll(p string) error {
	if p == "" {
		return nil
	}
	base := filepath.Base(p)
	if base == "." || base == ".." || base == "/" {
		return &os.PathError{Op: "RemoveAll", Path: p, Err: unix.EINVAL}
	}
	parent, err := unix.Open(filepath.Dir(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &os.PathError{Op: "RemoveAll", Path: p, Err: err}
	}
	defer unix.Close(parent)
	err = unix.Unlinkat(parent, base, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &os.PathError{Op: "RemoveAll", Path: p, Err: err}
	}
	if err := removeTree(parent, base, false); err != nil {
		return fmt.Errorf("removing %s: %w", p, err)
	}
	return nil
}

// Empty removes everything in the directory dir, as RemoveAll would, and leaves dir
// itself (a mount point, say: a kept container's /run/secrets or /dev/shm). dir is
// opened without following a link at its last component (a link there is an error);
// a dir its owner may not write gets its owner's rwx back, as any directory below.
func Empty(dir string) error {
	base := filepath.Base(dir)
	if dir == "" || base == "." || base == ".." || base == "/" {
		return &os.PathError{Op: "Empty", Path: dir, Err: unix.EINVAL}
	}
	parent, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "Empty", Path: dir, Err: err}
	}
	defer unix.Close(parent)
	if err := removeTree(parent, base, true); err != nil {
		return fmt.Errorf("emptying %s: %w", dir, err)
	}
	return nil
}

// batch is how many names of a directory are read at a time: a directory with more
// is read again from its start once they are gone.
const batch = 1024

// level is one directory on the way down from the tree's root.
type level struct {
	name     string // its name in the directory above
	dev, ino uint64
	pending  []string        // names read and not yet removed
	more     bool            // the directory may hold names not read yet
	skip     map[string]bool // names that could not be removed
	opened   bool            // given its owner's rwx back
}

// removeTree removes the directory name in parent and everything below it (only
// what is below it when keepRoot).
func removeTree(parent int, name string, keepRoot bool) error {
	fd, st, err := openDir(parent, name)
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	stack := []*level{{name: name, dev: st.Dev, ino: st.Ino, more: true}}
	var first error
	note := func(l *level, n string, err error) {
		if l.skip == nil {
			l.skip = map[string]bool{}
		}
		l.skip[n] = true
		if first == nil {
			first = fmt.Errorf("%q: %w", n, err)
		}
	}
	for {
		top := stack[len(stack)-1]
		if len(top.pending) == 0 && top.more {
			if top.pending, top.more, err = readBatch(fd, top.skip); err != nil {
				top.more = false
				if first == nil {
					first = fmt.Errorf("%q: %w", top.name, err)
				}
			}
		}
		if len(top.pending) > 0 {
			n := top.pending[0]
			top.pending = top.pending[1:]
			child, err := removeEntry(fd, top, n)
			if err != nil {
				note(top, n, err)
			} else if child != nil {
				unix.Close(fd)
				fd = child.fd
				stack = append(stack, &level{name: n, dev: child.st.Dev, ino: child.st.Ino, more: true})
			}
			continue
		}
		// Every entry of top is gone (or left): remove it from the directory above.
		if len(stack) == 1 {
			unix.Close(fd)
			if keepRoot {
				return first
			}
			if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && first == nil {
				first = fmt.Errorf("%q: %w", name, err)
			}
			return first
		}
		up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("going back up from %q: %w", top.name, err)
		}
		above := stack[len(stack)-2]
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil || ust.Dev != above.dev || ust.Ino != above.ino {
			unix.Close(up)
			return fmt.Errorf("%q was moved while it was being removed: the removal stopped there", top.name)
		}
		fd = up
		stack = stack[:len(stack)-1]
		if err := withRights(fd, above, func() error { return unix.Unlinkat(fd, top.name, unix.AT_REMOVEDIR) }); err != nil {
			note(above, top.name, err)
		}
	}
}

// opened is a directory opened to go down into.
type opened struct {
	fd int
	st unix.Stat_t
}

// removeEntry removes n from the directory fd (l): a file or link at once, an empty
// directory too; a directory with entries is opened and returned, to be emptied first.
func removeEntry(fd int, l *level, n string) (*opened, error) {
	err := withRights(fd, l, func() error { return unix.Unlinkat(fd, n, 0) })
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, err
	}
	if unix.Unlinkat(fd, n, unix.AT_REMOVEDIR) == nil {
		return nil, nil
	}
	cfd, cst, err := openDir(fd, n)
	if err != nil {
		return nil, err
	}
	return &opened{cfd, cst}, nil
}

// withRights runs op on an entry of the directory fd (l), and once more after giving
// the directory its owner's rwx back when op was refused for want of them.
func withRights(fd int, l *level, op func() error) error {
	err := op()
	if err == nil || l.opened || !(errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		return err
	}
	l.opened = true
	if unix.Fchmod(fd, 0o700) != nil {
		return err
	}
	return op()
}

// openDir opens the directory name in dirfd for reading, never through a link; one
// its owner may not open (000) gets its owner's rwx back through an O_PATH
// descriptor (chmod of /proc/self/fd/N: fchmod takes no O_PATH descriptor).
func openDir(dirfd int, name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if errors.Is(err, unix.EACCES) {
		if p, perr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); perr == nil {
			_ = unix.Chmod("/proc/self/fd/"+strconv.Itoa(p), 0o700)
			unix.Close(p)
			fd, err = unix.Openat(dirfd, name, flags, 0)
		}
	}
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// readBatch reads up to batch names of the directory fd from its start, leaving out
// those in skip, and says whether it stopped before the end.
func readBatch(fd int, skip map[string]bool) (names []string, more bool, err error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, false, err
	}
	err = dirent.Read(fd, ".", 8192, func(n string, _ byte) bool {
		if skip[n] {
			return true
		}
		names = append(names, n)
		more = len(names) == batch
		return !more
	})
	return names, more, err
}
