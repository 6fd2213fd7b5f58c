package rmtree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
)

// RemoveAll removes p and everything below it, as os.RemoveAll does (without
// following symlinks). On a permission error the directories below p get their
// owner's rwx back (openUp), and the removal runs once more. The walk goes through
// descriptors only, so a sandbox still running beside it can change what is removed
// but not make it reach, chmod or remove anything outside p.
func RemoveAll(p string) error {
	err := os.RemoveAll(p)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	parent, err2 := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err2 != nil {
		return err
	}
	openUp(parent, filepath.Base(p))
	unix.Close(parent)
	return os.RemoveAll(p)
}

// openUp gives the directory name in parent (and each directory below it) mode 0700.
// A symlink is never followed: the entry is opened O_PATH|O_NOFOLLOW|O_DIRECTORY,
// which refuses anything but a directory, and the mode is set through that
// descriptor (its /proc/self/fd link names the directory itself), so a link the
// sandbox left pointing at a host directory changes nothing there. Like os.RemoveAll,
// which runs after it, it reaches every depth with one descriptor open per level:
// a fixed bound would let a sandbox keep a locked directory (and whatever it holds)
// on the host for good by putting it deeper.
func openUp(parent int, name string) {
	fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o700) != nil {
		return
	}
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var names []string
	err = dirent.Read(dir, name, 4096, func(n string, typ byte) bool {
		if typ == unix.DT_DIR || typ == unix.DT_UNKNOWN {
			names = append(names, n)
		}
		return true
	})
	unix.Close(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		openUp(fd, n)
	}
}
