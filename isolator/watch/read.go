package watch

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits on what the watch reads from files the sandbox can write.
const (
	maxMeta  = 1 << 20   // a config or pointer file
	maxIndex = 512 << 20 // a git index
)

// readFile reads a regular file of at most limit bytes the sandbox may have written:
// without following a symlink at its name and without blocking on a FIFO swapped in
// after it was looked at.
func readFile(p string, limit int64) ([]byte, error) {
	f, _, err := openRegular(p, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// openRegular opens p, a regular file of at most limit bytes the sandbox may have
// written, as readFile reads it, and returns its size.
func openRegular(p string, limit int64) (*os.File, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", p)
	case fi.Size() > limit:
		err = fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}
