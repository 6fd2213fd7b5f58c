//go:build !linux

package planner

import (
	"io/fs"
	"os/exec"
)

// lookPath reports whether exec.LookPath finds name (the search path and the stat
// cache serve Linux's shortcut only).
func lookPath(_, name string, _ func(string) (fs.FileInfo, error)) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
