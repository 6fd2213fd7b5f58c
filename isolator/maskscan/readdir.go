package maskscan

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// readDirScan is the portable walk, for systems without getdents64 and O_PATH
// (macOS): it lists every directory below root, one at a time, with
// (*os.File).ReadDir, and finds what the Linux walk finds, failing on the same
// errors. It keeps no cache: every scan is a full walk. As in the Linux walk, each
// directory is opened relative to its parent's descriptor with O_NOFOLLOW, so no
// symlink is crossed. It returns the tree and the number of directories read.
func readDirScan(root string, m *matcher) (*node, int64, error) {
	fd, err := openDir(unix.AT_FDCWD, root, 0)
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	r := &dirReader{root: root, m: m}
	tree := &node{}
	if err := r.read(tree, fd); err != nil {
		return nil, 0, &fs.PathError{Op: "read", Path: root, Err: err}
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	return tree, r.reads, nil
}

// dirReader is the state of one readDirScan.
type dirReader struct {
	root  string
	m     *matcher
	reads int64
	err   error // the error that failed the scan
}

// read lists n, open as fd, which it closes, and then its subdirectories. It
// returns the error listing n; one below n that fails the scan is left in r.err.
func (r *dirReader) read(n *node, fd int) error {
	f := os.NewFile(uintptr(fd), n.name)
	defer f.Close()
	r.reads++
	ents, err := f.ReadDir(-1)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // the caller names the directory
	}
	if err != nil {
		return err
	}
	n.ok = true
	for _, e := range ents { // sorted by name
		switch name := e.Name(); {
		case e.IsDir():
			if r.m.marked(name) {
				n.matches = append(n.matches, entry{name, false})
			}
			if !r.m.skipped(name) {
				n.kids = append(n.kids, &node{name: name, parent: n})
			}
		case r.m.reported(name):
			n.matches = append(n.matches, entry{name, e.Type()&fs.ModeSymlink != 0})
		}
	}
	for _, k := range n.kids {
		if r.check(fd, k); r.err != nil {
			break
		}
	}
	return nil
}

// check reads k, a subdirectory of the directory open as pfd; a directory that
// can be searched but not listed is probed for the literal mask names. As in the
// Linux walk, a directory that is gone, is not one, or cannot be read is left
// out; any other error, and a directory of the scanning user's own that cannot
// be read (ErrOwnUnreadable), fails the scan.
func (r *dirReader) check(pfd int, k *node) {
	fd, err := openDir(pfd, k.name, unix.O_NOFOLLOW)
	switch {
	case err == nil:
		err = r.read(k, fd)
	case errors.Is(err, unix.EACCES):
		err = r.probe(pfd, k)
	}
	if err == nil {
		return
	}
	*k = node{name: k.name, parent: k.parent}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP),
		errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return
	}
	if r.err == nil {
		r.err = &fs.PathError{Op: "scan", Path: r.root + "/" + k.path(), Err: err}
	}
}

// probe looks the literal mask names up in k, a subdirectory of the directory
// open as pfd that cannot be listed.
func (r *dirReader) probe(pfd int, k *node) error {
	var st unix.Stat_t
	if err := fstatatRetry(pfd, k.name, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if int(st.Uid) == unix.Geteuid() && unix.Geteuid() != 0 {
		return ErrOwnUnreadable
	}
	r.reads++
	k.ok = true
	for _, name := range r.m.literals {
		err := fstatatRetry(pfd, k.name+"/"+name, &st)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES):
		case err != nil:
			return err
		case st.Mode&unix.S_IFMT != unix.S_IFDIR || r.m.marked(name):
			k.matches = append(k.matches, entry{name, st.Mode&unix.S_IFMT == unix.S_IFLNK})
		}
	}
	slices.SortFunc(k.matches, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return nil
}

// openDir opens the directory name, relative to dirfd, for reading.
func openDir(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func fstatatRetry(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
