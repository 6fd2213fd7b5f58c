package sandboxinit

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited closes every descriptor above stderr except keep (-1: none): those
// listed in /proc/self/fd, else, without /proc, every number close_range reaches. It
// fails only when neither works, and the caller must then not start the command.
func closeInherited(keep int) error {
	if keep >= 0 {
		unix.CloseOnExec(keep) // the forwarders must not hold the readiness socket
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err == nil {
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= 2 || fd == keep {
				continue
			}
			_ = unix.Close(fd) // the directory's own descriptor is already gone: EBADF
		}
		return nil
	}
	lo := uint(3)
	if keep >= 3 {
		if keep > 3 {
			if err := unix.CloseRange(3, uint(keep-1), 0); err != nil {
				return fmt.Errorf("closing inherited descriptors: %w", err)
			}
		}
		lo = uint(keep + 1)
	}
	if err := unix.CloseRange(lo, ^uint(0), 0); err != nil {
		return fmt.Errorf("closing inherited descriptors: %w", err)
	}
	return nil
}

// CloseOnExecInherited marks every descriptor above stderr close-on-exec, so nothing
// devsandbox inherited from its own parent reaches bwrap or the sandbox. It is the
// first thing devsandbox does.
func CloseOnExecInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
