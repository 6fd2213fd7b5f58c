//go:build !linux

package krun

import "os"

// pinService returns sock: krun needs Linux, and this package builds elsewhere only
// so that the macOS build of ./... does.
func pinService(sock string) (string, *os.File, error) { return sock, nil, nil }
