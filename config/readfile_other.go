//go:build !unix

package config

import (
	"errors"
	"io/fs"
	"os"
)

// readAll is os.ReadFile, its error the cause the *fs.PathError holds.
func readAll(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return b, err
}
