//go:build !linux

package rmtree

import "os"

// RemoveAll is os.RemoveAll here: the descriptor walk that opens up locked
// directories is Linux's (O_PATH).
func RemoveAll(p string) error { return os.RemoveAll(p) }

// Empty removes everything in the directory dir, leaving dir.
func Empty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var first error
	for _, n := range names {
		if err := os.RemoveAll(dir + "/" + n); err != nil && first == nil {
			first = err
		}
	}
	return first
}
