//go:build !linux

package pin

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Elsewhere no descriptor is held: the file is opened by the path walked, and its
// identity compared with the one pinned.
func (s *Source) readFile() ([]byte, error) {
	f, err := s.open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f)
}

func (s *Source) open(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if st, ok := fi.Sys().(*syscall.Stat_t); err != nil || !ok || uint64(st.Dev) != s.ID.Dev || uint64(st.Ino) != s.ID.Ino {
		f.Close()
		return nil, fmt.Errorf("%s is no longer the file checked", p)
	}
	return f, nil
}

func (s *Source) readDir() ([]Entry, error) {
	d, err := s.open(s.path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := dirNames(d)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, n := range names {
		p := filepath.Join(s.path, n)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotContent, n)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if len(b) > MaxContent {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrNotContent, n, MaxContent)
		}
		out = append(out, Entry{Name: n, Content: b})
	}
	return out, nil
}
