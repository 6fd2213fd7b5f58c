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
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
