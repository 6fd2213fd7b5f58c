package diskguard

import (
	"math"

	"golang.org/x/sys/unix"
)

// HostStatfs is the Statfs of the host: the blocks available to an unprivileged
// user (f_bavail, what df shows as Avail), not the root-reserved ones.
func HostStatfs(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return available(st.Blocks, st.Bavail, int64(st.Bsize)), nil
}

// NoBlocks is the space available on a file system without blocks (f_blocks 0:
// sysfs, procfs, cgroupfs, which a user may bind writable and which report 0
// available): no write fills a disk there, so the reserve has nothing to keep.
const NoBlocks = math.MaxUint64

// available is the bytes available to an unprivileged user of a file system of
// blocks blocks, bavail of them available, of bsize bytes each; NoBlocks for one with
// none. The conversions are for macOS, whose Bsize is a uint32.
func available(blocks, bavail uint64, bsize int64) uint64 {
	if blocks == 0 {
		return NoBlocks
	}
	return bavail * uint64(bsize)
}
