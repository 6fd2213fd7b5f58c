//go:build !linux

package krun

import (
	"errors"
	"os"
)

// Open needs Linux namespaces.
func (hostNetns) Open(int) (user, net *os.File, err error) {
	return nil, nil, errors.ErrUnsupported
}
