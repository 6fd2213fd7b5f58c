package watch

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ctime is a file's change time in ns: a process can set a file's mtime back, not its
// ctime.
func ctime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// dirFlags open a directory on the way to a path the watch acts on: without following
// a symlink, without needing read permission (O_PATH).
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// fdDir is the path that reaches the directory open at fd itself, whatever has
// become of the path it was opened by.
func fdDir(fd int) (string, bool) { return "/proc/self/fd/" + strconv.Itoa(fd), true }
