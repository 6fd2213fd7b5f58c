//go:build !linux

package main

import "syscall"

// proxySysProcAttr starts the proxy in its own process group. There is no
// parent-death signal outside Linux: the lifeline alone ends the proxy when
// devsandbox exits (see spawnProxy).
func proxySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
