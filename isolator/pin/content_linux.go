package pin

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// reopen opens the pinned file for reading through its descriptor and checks that it
// is the one pinned.
func (s *Source) reopen(flags int) (*os.File, error) {
	if s.File == nil {
		return nil, fmt.Errorf("%w: no descriptor", ErrNotContent)
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(s.File.Fd())), flags|unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != s.ID.Dev || st.Ino != s.ID.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("reopening %s as pinned: not the file pinned (%v)", s.path, err)
	}
	return os.NewFile(uintptr(fd), "pinned"), nil
}

func (s *Source) readFile() ([]byte, error) {
	f, err := s.reopen(0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f)
}

func (s *Source) readDir() ([]Entry, error) {
	d, err := s.reopen(unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := dirNames(d)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		fd, err := unix.Openat(int(d.Fd()), n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotContent, n, err)
		}
		f := os.NewFile(uintptr(fd), n)
		b, err := readRegular(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, Entry{Name: n, Content: b})
	}
	return out, nil
}
