package pin

import (
	"errors"
	"fmt"
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
