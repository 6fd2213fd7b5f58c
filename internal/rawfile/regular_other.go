//go:build !unix

package rawfile

import (
	"fmt"
	"io"
	"os"
)

// ReadRegular reads the regular file at path, at most limit bytes (see the unix
// version; here without O_NONBLOCK, so only the stat before the open guards a FIFO).
func ReadRegular(path string, limit int64, follow bool) ([]byte, error) {
	b, _, err := ReadRegularInfo(path, limit, follow)
	return b, err
}

// ReadRegularInfo is ReadRegular; Info.Links is not known here (0).
func ReadRegularInfo(path string, limit int64, follow bool) ([]byte, Info, error) {
	b, err := readRegular(path, limit, follow)
	return b, Info{}, err
}

func readRegular(path string, limit int64, follow bool) ([]byte, error) {
	stat := os.Stat
	if !follow {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return b, err
}
