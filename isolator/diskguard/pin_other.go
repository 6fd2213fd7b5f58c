//go:build !linux

package diskguard

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPin opens path for fstatfs (no O_PATH off Linux: read-only).
func openPin(path string) (*os.File, error) { return os.Open(path) }

// fileStatfs is HostStatfs of the file system holding f.
func fileStatfs(f *os.File) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return available(st.Blocks, st.Bavail, int64(st.Bsize)), nil
}
