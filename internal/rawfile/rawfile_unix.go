//go:build unix

package rawfile

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ReadFile is os.ReadFile with the system calls themselves: os.File registers every
// file with the runtime's poller (on a launch, the first file devsandbox opens sets
// the poller up) and asks for its size through the poller's lock, three fcntl, an
// epoll_ctl and a finalizer for a file read once. The error is the errno, as the
// *fs.PathError of os.ReadFile would hold it.
func ReadFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	size := 512
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Size > 0 && st.Size < 1<<30 {
		size = int(st.Size) + 1 // one more byte sees the end in the same read
	}
	return readAll(fd, size, -1)
}

// readAll reads fd to its end into a buffer made with room for size bytes, grown when
// the file holds more; with a limit (>= 0), a file found longer than limit bytes is
// ErrTooLarge. EINTR and EAGAIN are asked again.
func readAll(fd, size int, limit int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if limit >= 0 && int64(len(buf)) > limit {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// retry calls f until it fails with something other than EINTR.
func retry(f func() error) error {
	err := f()
	for err == unix.EINTR {
		err = f()
	}
	return err
}
