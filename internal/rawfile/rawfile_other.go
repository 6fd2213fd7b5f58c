//go:build !unix

package rawfile

import (
	"errors"
	"io/fs"
	"os"
)

// ReadFile is os.ReadFile, its error the cause the *fs.PathError holds.
func ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return b, err
}
