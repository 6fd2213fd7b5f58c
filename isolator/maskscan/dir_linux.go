package maskscan

import (
	"errors"
	"slices"
	"strings"
	"unsafe"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"golang.org/x/sys/unix"
)

// read lists the directory n, open for reading as fd, and updates n; st is its
// stamp, taken through fd before the read. buf is the caller's getdents buffer.
func (w *walk) read(n *node, fd int, st stamp, buf []byte) error {
	w.reads.Add(1)
	var dirs []string
	var ents []entry
	for {
		nb, err := dirent.Getdents(fd, buf)
		if err != nil {
			return err
		}
		if nb == 0 {
			break
		}
		recs := dirent.Parse(buf[:nb])
		for {
			raw, typ, ok := recs.Next()
			if !ok {
				break
			}
			// A view of the name for matching, copied only when kept: buf is
			// reused, and most names are neither directories nor masked.
			name := unsafe.String(&raw[0], len(raw))
			if typ == unix.DT_UNKNOWN { // the filesystem does not say: ask
				_, mode, err := w.fstatat(fd, name)
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				if err != nil {
					return err
				}
				typ = dtype(mode)
			}
			switch {
			case typ == unix.DT_DIR:
				if w.m.marked(name) {
					ents = append(ents, entry{strings.Clone(name), false})
				}
				if !w.m.skipped(name) {
					dirs = append(dirs, strings.Clone(name))
				}
			case w.m.reported(name):
				ents = append(ents, entry{strings.Clone(name), typ == unix.DT_LNK})
			}
		}
		if err := recs.Err(); err != nil {
			return err
		}
	}
	slices.Sort(dirs)
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	if n.update(st, dirs, ents, w.start) {
		w.dirty.Store(true)
	}
	return nil
}

// probe updates n, a directory that can be searched but not listed, open as the
// O_PATH descriptor fd: a sandboxed process can still open the entries it knows the
// name of, so the literal mask names are looked up. Its subdirectories are unknown.
func (w *walk) probe(n *node, fd int, st stamp) error {
	w.reads.Add(1)
	var ents []entry
	for _, name := range w.m.literals {
		_, mode, err := w.fstatat(fd, name)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES):
		case err != nil:
			return err
		case mode != unix.S_IFDIR || w.m.marked(name):
			ents = append(ents, entry{name, mode == unix.S_IFLNK})
		}
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	if n.update(st, nil, ents, w.start) {
		w.dirty.Store(true)
	}
	return nil
}

func dtype(mode uint32) uint8 {
	switch mode {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return unix.DT_REG // any other: only directories and symlinks are told apart
}

// fstat returns the stamp and file type (S_IFMT bits) of the file open as fd.
func (w *walk) fstat(fd int) (stamp, uint32, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if err == nil {
			return w.stamp(&st), st.Mode & unix.S_IFMT, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return stamp{}, 0, err
		}
	}
}

// fstatat is fstat of name in the directory open as dirfd, not following a symlink.
func (w *walk) fstatat(dirfd int, name string) (stamp, uint32, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return w.stamp(&st), st.Mode & unix.S_IFMT, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return stamp{}, 0, err
		}
	}
}

func (w *walk) stamp(st *unix.Stat_t) stamp {
	s := stamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	if w.restamp != nil {
		w.restamp(&s)
	}
	return s
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
