package planner

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// random fills b from getrandom(2), the system call itself: crypto/rand, and
// x/sys/unix.Getrandom since it calls the runtime's vDSO getrandom, set up the
// runtime's vDSO random state on their first read (a mapping and its page faults,
// 40-50 µs of a proxy-mode launch here) for a few bytes. It falls back to
// crypto/rand when getrandom fails or falls short.
func random(b []byte) {
	if len(b) == 0 {
		return
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0 || int(n) != len(b):
			randomStd(b)
		}
		return
	}
}
