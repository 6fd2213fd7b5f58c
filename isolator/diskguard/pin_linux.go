package diskguard

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPin opens path for fstatfs only (O_PATH: no read permission needed, a
// directory or a file).
func openPin(path string) (*os.File, error) {
	return os.OpenFile(path, unix.O_PATH|unix.O_CLOEXEC, 0)
}

// fileStatfs is HostStatfs of the file system holding f.
func fileStatfs(f *os.File) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return available(st.Blocks, st.Bavail, st.Bsize), nil
}
