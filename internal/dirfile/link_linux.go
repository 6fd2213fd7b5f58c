package dirfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// LinkAt makes name in the directory dirfd a new file of mode holding content, in a
// directory others (a sandbox) may write at the same time: name never holds, even
// for a moment, anything but that file. The file is made without a name (O_TMPFILE)
// and written, then the open file itself is linked at name (linkat of
// /proc/self/fd/N with AT_SYMLINK_FOLLOW: the inode devsandbox holds, whatever any
// name holds by then). Where the file system has no O_TMPFILE it is made under a
// random name (O_EXCL, O_NOFOLLOW), linked the same way, and that name removed: what
// another process renames onto the random name meanwhile is never what gets linked.
//
// LinkAt never replaces: when name exists (something took it since the caller moved
// the previous file away) it fails with an error that errors.Is fs.ErrExist, and
// leaves name as it found it. Without /proc it fails, naming why. With a random name,
// a process that renamed something over it leaves the file devsandbox wrote with no
// name, which the kernel does not link again: LinkAt then fails with ErrSwapped, and
// name is left as it was.
func LinkAt(dirfd int, name string, content []byte, mode uint32) error {
	return linkAt(dirfd, name, content, mode, true, "/proc/self/fd/")
}

// linkAt is LinkAt; unnamed tries O_TMPFILE first, proc is where the process's
// descriptors are linked from.
func linkAt(dirfd int, name string, content []byte, mode uint32, unnamed bool, proc string) error {
	fd, tmp, err := create(dirfd, name, mode, unnamed)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if tmp != "" {
		// The name was only the way to make the file: what holds it now may be
		// anyone's, and is neither reused nor kept.
		defer unix.Unlinkat(dirfd, tmp, 0)
	}
	if _, err := f.Write(content); err != nil {
		return err
	}
	err = unix.Linkat(unix.AT_FDCWD, proc+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.ENOENT) {
		if _, serr := os.Stat(proc + strconv.Itoa(fd)); serr != nil {
			return fmt.Errorf("linking the new file at %s through %s: %w (devsandbox needs /proc mounted to put a file in place that no other process can swap)", name, proc, err)
		}
		// A named file whose only name was replaced has no link left, and the
		// kernel links no such file again.
		var st unix.Stat_t
		if tmp != "" && unix.Fstat(fd, &st) == nil && st.Nlink == 0 {
			return fmt.Errorf("%s: %w", name, ErrSwapped)
		}
	}
	return err
}

// create makes the file: unnamed where the file system can, else under a random
// name (tmp).
func create(dirfd int, name string, mode uint32, unnamed bool) (fd int, tmp string, err error) {
	if unnamed {
		fd, err = unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, mode)
		// EOPNOTSUPP: a file system without O_TMPFILE; EISDIR: a kernel without it.
		if err == nil || !(errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL)) {
			return fd, "", err
		}
	}
	return createTemp(dirfd, name, mode)
}
