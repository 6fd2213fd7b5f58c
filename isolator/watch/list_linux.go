package watch

import (
	"errors"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"golang.org/x/sys/unix"
)

// listNames reads the names in dir now, to answer which tripwires in it exist with one
// listing instead of an lstat(2) each. names is nil and ok true when dir does not
// exist or is no directory (then no path below it exists: lstat would fail with
// ENOENT or ENOTDIR); ok is false when the answer must come from lstat (dir
// unreadable, over listMax names, or another error).
func listNames(dir string) (names map[string]bool, ok bool) {
	names = map[string]bool{}
	err := dirent.ReadDir(dir, 8192, func(name string, _ byte) bool {
		names[name] = true
		return len(names) <= listMax
	})
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return nil, true
	case err != nil || len(names) > listMax:
		return nil, false
	}
	return names, true
}
