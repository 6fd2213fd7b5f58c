package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited closes every descriptor above stderr except keep (-1: none): with
// close_range, two system calls whatever the number of descriptors; on a kernel
// without it (before 5.9), those listed in /proc/self/fd. It fails only when neither
// works, and the caller must then not start the command.
func closeInherited(keep int) error {
	if keep >= 0 {
		unix.CloseOnExec(keep) // the forwarders must not hold the readiness socket
	}
	err := closeRangeExcept(keep)
	if err == nil {
		return nil
	}
	ents, derr := os.ReadDir("/proc/self/fd")
	if derr != nil {
		return fmt.Errorf("closing inherited descriptors: %w", errors.Join(err, derr))
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 || fd == keep {
			continue
		}
		_ = unix.Close(fd) // the directory's own descriptor is already gone: EBADF
	}
	return nil
}

// closeRangeExcept closes every descriptor from 3 up except keep with close_range.
func closeRangeExcept(keep int) error {
	lo := uint(3)
	if keep >= 3 {
		if keep > 3 {
			if err := unix.CloseRange(3, uint(keep-1), 0); err != nil {
				return err
			}
		}
		lo = uint(keep + 1)
	}
	return unix.CloseRange(lo, ^uint(0), 0)
}

// CloseOnExecInherited marks every descriptor above stderr close-on-exec, so nothing
// devsandbox inherited from its own parent reaches bwrap or the sandbox: with one
// close_range (Linux 5.11), else those listed in /proc/self/fd. It is the first thing
// devsandbox does.
func CloseOnExecInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
