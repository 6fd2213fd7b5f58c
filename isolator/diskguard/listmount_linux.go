package diskguard

import (
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listMounts is listmount(2) (Linux 6.8): the unique IDs of the mounts below the
// mount of unique ID id, up to len(ids) of them, into ids; the number written.
type listMounts func(id uint64, ids []uint64) (int, error)

// mntIDReq is the kernel's struct mnt_id_req in its first size (24 bytes), which
// every kernel with listmount takes.
type mntIDReq struct {
	size  uint32
	spare uint32
	mntID uint64
	param uint64
}

// listmount is the system call's listMounts.
func listmount(id uint64, ids []uint64) (int, error) {
	req := mntIDReq{size: uint32(unsafe.Sizeof(mntIDReq{})), mntID: id}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_LISTMOUNT, uintptr(unsafe.Pointer(&req)), uintptr(unsafe.Pointer(unsafe.SliceData(ids))), uintptr(len(ids)), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// noneBelow reports whether the kernel says that no file system is mounted below
// any of the directories fds holds open: the mounts holding them (statx's unique
// mount ID) have no mount below them at all (list). A mount below a directory lies
// below the mount holding it: the lookup of its mount point passes the directory,
// in that mount, and goes on only into mounts made on it and on those. So a mount
// with none below it has none below the directory, and the mount table, whose
// generation is most of the cost of finding them, need not be read. False when it
// cannot tell (a kernel before 6.8, a system call a filter refuses, any error) or
// when a mount has some below it: the caller reads the table then. Nothing is
// mounted below a file.
func noneBelow(fds []int, list listMounts) bool {
	var seen [8]uint64
	known := seen[:0]
	var one [1]uint64
	for _, fd := range fds {
		var st unix.Statx_t
		err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_MNT_ID_UNIQUE, &st)
		if err != nil || st.Mask&unix.STATX_MNT_ID_UNIQUE == 0 || st.Mask&unix.STATX_TYPE == 0 {
			return false
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || slices.Contains(known, st.Mnt_id) {
			continue
		}
		known = append(known, st.Mnt_id)
		if n, err := list(st.Mnt_id, one[:]); err != nil || n != 0 {
			return false
		}
	}
	return true
}
