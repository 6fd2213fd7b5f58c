//go:build !linux

package helper

import "os"

// saveTerminal does nothing where krun does not run (it needs Linux and KVM).
func saveTerminal(*os.File) func() { return nil }
