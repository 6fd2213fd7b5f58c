package pin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ErrNotContent is wrapped by the errors of ReadFile and ReadDir for what cannot be
// delivered as content: not a regular file, a directory holding anything else, or
// more than the limits.
var ErrNotContent = errors.New("not deliverable as content")

// Limits of what ReadFile and ReadDir deliver: content travels to the engine and is
// kept there as a volume per content (the git metadata and tools' files it is for
// are small).
const (
	MaxContent = 1 << 20 // bytes of one file
	MaxEntries = 256     // files of one directory
)

// Entry is a regular file directly in a pinned directory.
type Entry struct {
	Name    string
	Content []byte
}

// ReadFile returns the content of the pinned regular file: the file opened, whatever
// its name leads to now.
func (s *Source) ReadFile() ([]byte, error) {
	if s.Dir {
		return nil, fmt.Errorf("%w: a directory", ErrNotContent)
	}
	return s.readFile()
}

// ReadDir returns the regular files directly in the pinned directory, by name, each
// opened from the directory without following a symlink; anything else in it (a
// subdirectory, a link) fails with ErrNotContent.
func (s *Source) ReadDir() ([]Entry, error) {
	if !s.Dir {
		return nil, fmt.Errorf("%w: not a directory", ErrNotContent)
	}
	return s.readDir()
}

// readRegular reads f, a regular file of at most MaxContent bytes.
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

// dirNames returns the names in the open directory d, sorted, at most MaxEntries.
func dirNames(d *os.File) ([]string, error) {
	names, err := d.Readdirnames(MaxEntries + 1)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(names) > MaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries", ErrNotContent, MaxEntries)
	}
	slices.Sort(names)
	return names, nil
}
