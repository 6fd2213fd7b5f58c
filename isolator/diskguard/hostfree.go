package diskguard

import "golang.org/x/sys/unix"

// HostFree reads the file system holding path: its device (stat's st_dev) and
// HostStatfs's free space.
func HostFree(path string) (Free, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Free{}, err
	}
	avail, err := HostStatfs(path)
	// The conversion is for macOS, whose Dev is an int32.
	return Free{Dev: uint64(st.Dev), Avail: avail}, err
}
