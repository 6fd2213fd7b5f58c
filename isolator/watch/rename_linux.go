package watch

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to name in the directory dirfd, failing with EEXIST
// when name exists; on a file system without RENAME_NOREPLACE, a plain rename.
func renameNoReplace(dirfd int, old, name string) error {
	err := unix.Renameat2(dirfd, old, dirfd, name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) {
		err = unix.Renameat(dirfd, old, dirfd, name)
	}
	return err
}
