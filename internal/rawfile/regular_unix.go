//go:build unix

package rawfile

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ReadRegular reads the regular file at path, at most limit bytes, for a file a
// sandbox could have put there (a project's .devsandbox.toml, a .miserc.toml, git's
// pointer files): a FIFO must not hang the launch, and a link to /dev/zero or a huge
// file must not fill the host's memory. With follow a final symlink is followed (to
// a regular file only), else it is refused (ELOOP). Anything but a regular file is
// refused before it is opened where a stat can tell (opening a device can act), and
// again on the descriptor (O_NONBLOCK: a FIFO swapped in between does not block);
// the error wraps ErrNotRegular. A file longer than limit wraps ErrTooLarge. Other
// errors are the errno, as ReadFile's; none names the path.
func ReadRegular(path string, limit int64, follow bool) ([]byte, error) {
	b, _, err := ReadRegularInfo(path, limit, follow)
	return b, err
}

// ReadRegularInfo is ReadRegular that also returns what the descriptor it read through
// says of the file: a check of its names is of the file whose bytes were read, not of
// one swapped in at the path since.
func ReadRegularInfo(path string, limit int64, follow bool) ([]byte, Info, error) {
	var st unix.Stat_t
	stat, flags := unix.Stat, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY
	if !follow {
		stat, flags = unix.Lstat, flags|unix.O_NOFOLLOW
	}
	if err := retry(func() error { return stat(path, &st) }); err != nil {
		return nil, Info{}, err
	}
	if err := regular(st); err != nil {
		return nil, Info{}, err
	}
	var fd int
	err := retry(func() (err error) { fd, err = unix.Open(path, flags, 0); return err })
	if err != nil {
		return nil, Info{}, err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, Info{}, err
	}
	if err := regular(st); err != nil {
		return nil, Info{}, err
	}
	if st.Size > limit {
		return nil, Info{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, st.Size, limit)
	}
	b, err := readAll(fd, int(st.Size)+1, limit) // one more byte sees the end in the same read
	if err != nil {
		return nil, Info{}, err
	}
	return b, Info{Links: uint64(st.Nlink)}, nil
}

// regular returns nil when st is a regular file's, else an error wrapping
// ErrNotRegular that says what it is.
func regular(st unix.Stat_t) error {
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		return nil
	}
	kind := "something else"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		kind = "a FIFO"
	case unix.S_IFCHR, unix.S_IFBLK:
		kind = "a device"
	case unix.S_IFSOCK:
		kind = "a socket"
	case unix.S_IFDIR:
		kind = "a directory"
	case unix.S_IFLNK:
		kind = "a symlink"
	}
	return fmt.Errorf("%w: it is %s", ErrNotRegular, kind)
}
