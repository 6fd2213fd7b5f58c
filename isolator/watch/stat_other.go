//go:build !linux

package watch

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ctime is a file's change time in ns: a process can set a file's mtime back, not its
// ctime.
func ctime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }

// dirFlags open a directory on the way to a path the watch acts on, without following
// a symlink.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// fdDir: no path reaches a descriptor's directory here; the checker reads by path.
func fdDir(int) (string, bool) { return "", false }
