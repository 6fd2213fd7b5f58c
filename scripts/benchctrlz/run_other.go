//go:build !linux

package main

import "errors"

func run(options) error {
	return errors.New("benchctrlz needs Linux: a pty, a shell's job control and the isolators it measures")
}
