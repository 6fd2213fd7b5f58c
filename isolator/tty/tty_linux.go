package tty

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The requests that get and set a terminal's mode (struct termios).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// Open allocates a new pseudo-terminal pair with posix_openpt semantics.
//
// The master is opened non-blocking, so the returned *os.File is pollable:
// reads and writes honour deadlines and are interrupted by Close. The slave is
// an ordinary blocking file, ready to be a child's stdin, stdout and stderr.
// Neither becomes the caller's controlling terminal, and both are close-on-exec.
// A read from the master fails with EIO once every descriptor of the slave has
// been closed and the buffered output has been read.
func Open() (master, slave *os.File, err error) {
	return openPTY(unix.O_RDWR)
}

// openPTY is Open with the slave opened in access mode slaveMode (unix.O_RDWR,
// unix.O_WRONLY).
func openPTY(slaveMode int) (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking pty: %w", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("getting pty number: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	sfd, err := unix.Open(name, slaveMode|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return master, os.NewFile(uintptr(sfd), name), nil
}

// flushInput discards what the terminal fd received and nobody has read yet.
func flushInput(fd uintptr) error {
	if err := unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH); err != nil {
		return fmt.Errorf("discarding the terminal's pending input: %w", err)
	}
	return nil
}
