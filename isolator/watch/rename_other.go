//go:build !linux

package watch

import "golang.org/x/sys/unix"

// renameNoReplace renames old to name in the directory dirfd; elsewhere than on Linux
// it may replace a name taken since the caller looked.
func renameNoReplace(dirfd int, old, name string) error {
	return unix.Renameat(dirfd, old, dirfd, name)
}
