//go:build !linux

package cgroup

import "io"

// Prune has nothing to do: session cgroups exist on Linux only.
func Prune(io.Writer, bool) {}
