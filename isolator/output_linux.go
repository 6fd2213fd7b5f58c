package isolator

import (
	"os"

	"golang.org/x/sys/unix"
)

// kcmpFile is KCMP_FILE (linux/kcmp.h): compare two descriptors' open file
// descriptions.
const kcmpFile = 0

// sameDescription reports whether a and b are one open file description (kcmp(2)
// on this process); an error when the kernel cannot tell (no kcmp).
func sameDescription(a, b *os.File) (bool, error) {
	var same bool
	err := fileControl(a, func(fa int) error {
		return fileControl(b, func(fb int) error {
			pid := uintptr(os.Getpid())
			r, _, errno := unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpFile, uintptr(fa), uintptr(fb), 0)
			if errno != 0 {
				return errno
			}
			same = r == 0
			return nil
		})
	})
	return same, err
}
