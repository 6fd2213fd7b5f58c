//go:build !linux

package diskguard

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPin opens path for fstatfs (no O_PATH off Linux: read-only).
func openPin(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// fdStatfs is HostStatfs of the file system holding fd.
func fdStatfs(fd int) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return available(st.Blocks, st.Bavail, int64(st.Bsize)), nil
}
