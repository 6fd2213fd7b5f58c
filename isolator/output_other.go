//go:build !linux

package isolator

import (
	"errors"
	"os"
)

// sameDescription: no kcmp here; SharedOutput falls back to both appending.
func sameDescription(a, b *os.File) (bool, error) {
	return false, errors.ErrUnsupported
}
