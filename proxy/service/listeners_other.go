//go:build !linux

package service

import (
	"errors"
	"net"
	"os"
)

// NewListenerChannel is Linux-only: outside Linux no sandbox hands the proxy a
// listener (docker and krun reach its Unix socket through their own relay).
func NewListenerChannel() (host, proxy *os.File, err error) {
	return nil, nil, errors.ErrUnsupported
}

// SendListener is Linux-only (see NewListenerChannel).
func SendListener(ch *os.File, ln *os.File) error { return errors.ErrUnsupported }

// ReceiveListeners returns at once outside Linux, closing ch.
func ReceiveListeners(ch *os.File, serve func(net.Listener), bad func(error)) {
	if ch != nil {
		ch.Close()
	}
}
