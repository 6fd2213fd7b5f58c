//go:build unix && !linux

package dirfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// LinkAt makes name in the directory dirfd a new file of mode holding content,
// never replacing what is there (an error that errors.Is fs.ErrExist). Elsewhere than
// on Linux the file is made under a random name (O_EXCL, O_NOFOLLOW) and that name is
// linked at name: what another process renamed onto the random name meanwhile is
// found by its inode right after and reported as fs.ErrExist, but holds name until
// the caller moves it away.
func LinkAt(dirfd int, name string, content []byte, mode uint32) error {
	fd, tmp, err := createTemp(dirfd, name, mode)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer f.Close()
	defer unix.Unlinkat(dirfd, tmp, 0)
	if _, err := f.Write(content); err != nil {
		return err
	}
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", name, ErrSwapped)
		}
		return err
	}
	var ours, there unix.Stat_t
	if err := unix.Fstat(fd, &ours); err != nil {
		return err
	}
	if err := unix.Fstatat(dirfd, name, &there, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if ours.Dev != there.Dev || ours.Ino != there.Ino {
		return fmt.Errorf("%s: another file took the new file's name before it was linked: %w", name, fs.ErrExist)
	}
	return nil
}
