//go:build !linux

package pin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

func readRegular(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", ErrNotContent, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxContent+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxContent {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrNotContent, MaxContent)
	}
	return b, nil
}

func (s *Source) readDir() ([]Entry, error) {
	d, err := s.open(s.path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(MaxEntries + 1)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(names) > MaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries", ErrNotContent, MaxEntries)
	}
	slices.Sort(names)
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
