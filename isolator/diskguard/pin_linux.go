package diskguard

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPin opens path for fstatfs only (O_PATH: no read permission needed, a
// directory or a file). A bare descriptor, not an *os.File: the launch pays no
// non-blocking probe (two fcntl) and no poller registration for it.
func openPin(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// fdStatfs is HostStatfs of the file system holding fd.
func fdStatfs(fd int) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return available(st.Blocks, st.Bavail, st.Bsize), nil
}
