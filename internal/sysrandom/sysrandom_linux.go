package sysrandom

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read fills b from getrandom(2), retrying when a signal interrupts it; an error
// when the kernel fails it or returns fewer bytes (it does not for up to 256).
func Read(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return fmt.Errorf("getrandom: %w", errno)
		case int(n) != len(b):
			return fmt.Errorf("getrandom: %d bytes of %d", n, len(b))
		}
		return nil
	}
}
