//go:build !linux

package krun

import "syscall"

// serviceSysProcAttr has no parent-death signal to set: krun needs Linux and KVM, and
// this package builds elsewhere only so that the macOS build of ./... does.
func serviceSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
