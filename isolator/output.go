package isolator

import (
	"io"
	"os"
	"reflect"

	"golang.org/x/sys/unix"
)

// SharedOutput reports whether out and errOut are one destination, in which writes
// to either land in the order they are made: the same writer; or files that are one
// open file (one open file description, as a shell's `>F 2>&1` or `2>&1 | tee`
// gives), one terminal, pipe or socket, or one regular file that both opened to
// append. A container backend then gives the command one stream for both
// (wire.Hello.OneStream), as the engine, which copies a container's stdout and stderr
// apart, would not keep the order between them. Two opens of one regular file that
// do not append are not shared: each writes at its own offset, as the command's two
// descriptors would. It reads the files' state (fstat, fcntl, kcmp on Linux); what it
// cannot tell is not shared.
func SharedOutput(out, errOut io.Writer) bool {
	if out == nil || errOut == nil {
		return false
	}
	fo, okO := out.(*os.File)
	fe, okE := errOut.(*os.File)
	if okO && okE {
		return sameFile(fo, fe)
	}
	t := reflect.TypeOf(out)
	return t == reflect.TypeOf(errOut) && t.Comparable() && out == errOut
}

// sameFile is SharedOutput for two files.
func sameFile(a, b *os.File) bool {
	if a == b {
		return true
	}
	var sa, sb unix.Stat_t
	var flA, flB int
	if err := fileControl(a, func(fd int) error {
		var err error
		if err = unix.Fstat(fd, &sa); err == nil {
			flA, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		}
		return err
	}); err != nil {
		return false
	}
	if err := fileControl(b, func(fd int) error {
		var err error
		if err = unix.Fstat(fd, &sb); err == nil {
			flB, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		}
		return err
	}); err != nil {
		return false
	}
	if sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return false
	}
	if sa.Mode&unix.S_IFMT != unix.S_IFREG {
		// A terminal, a pipe, a socket: one object, which keeps the order of the
		// writes it gets, through any of its open descriptions.
		return true
	}
	if flA&unix.O_APPEND != 0 && flB&unix.O_APPEND != 0 {
		return true // every write goes to the end, whichever description made it
	}
	same, err := sameDescription(a, b)
	return err == nil && same
}

// fileControl runs f with f's descriptor, leaving its blocking mode as it is.
func fileControl(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
