package prestart

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenSource opens path as an early start's bind source: O_PATH (nothing is opened
// for reading, so a FIFO or a device does nothing), no symbolic link followed on the
// way or at the end, and only a directory or a regular file. The identity is the
// opened file's.
func OpenSource(path string) (*os.File, Identity, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, Identity{}, fmt.Errorf("%w: opening %s: %w", ErrUnsafe, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	id, mode, err := identify(fd)
	if err != nil {
		f.Close()
		return nil, Identity{}, fmt.Errorf("%w: %s: %w", ErrUnsafe, path, err)
	}
	if mode != unix.S_IFDIR && mode != unix.S_IFREG {
		f.Close()
		return nil, Identity{}, fmt.Errorf("%w: %s is neither a directory nor a regular file", ErrUnsafe, path)
	}
	return f, id, nil
}

// Identify returns the identity of the file f has open.
func Identify(f *os.File) (Identity, error) {
	id, _, err := identify(int(f.Fd()))
	return id, err
}

func identify(fd int) (Identity, uint32, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID, &st); err != nil {
		return Identity{}, 0, err
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return Identity{}, 0, errors.New("the kernel gives no mount id")
	}
	return Identity{Dev: unix.Mkdev(st.Dev_major, st.Dev_minor), Ino: st.Ino, MntID: st.Mnt_id}, uint32(st.Mode) & unix.S_IFMT, nil
}

// HostFS is the Host of this machine: a descriptor source is looked into through
// the descriptor the early start opened (Sources), a source by path as bwrap reaches
// it (following links, as bubblewrap resolves a bind's source).
type HostFS struct {
	Sources map[int]*os.File
}

// Present implements Host.
func (h HostFS) Present(src Source, rel string) (bool, error) {
	var dir int
	switch {
	case src.FD > 0:
		f, ok := h.Sources[src.FD]
		if !ok {
			return false, fmt.Errorf("descriptor %d is not open", src.FD)
		}
		dir = int(f.Fd())
	default:
		fd, err := unix.Open(src.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer unix.Close(fd)
		dir = fd
	}
	if rel == "." {
		return true, nil
	}
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
		var st unix.Stat_t
		serr := unix.Fstat(fd, &st)
		unix.Close(fd)
		if serr != nil {
			return false, serr
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return false, fmt.Errorf("%s is a symbolic link", rel)
		}
		return true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return false, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return false, fmt.Errorf("a symbolic link on the way to %s", rel)
	}
	return false, err
}
