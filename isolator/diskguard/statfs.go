package diskguard

import "golang.org/x/sys/unix"

// HostStatfs is the Statfs of the host: the blocks available to an unprivileged
// user (f_bavail, what df shows as Avail), not the root-reserved ones.
func HostStatfs(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	// The conversions are for macOS, whose Bsize is a uint32.
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
