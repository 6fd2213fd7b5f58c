//go:build !linux

package rmtree

import "os"

// RemoveAll is os.RemoveAll here: the descriptor walk that opens up locked
// directories is Linux's (O_PATH).
func RemoveAll(p string) error { return os.RemoveAll(p) }
