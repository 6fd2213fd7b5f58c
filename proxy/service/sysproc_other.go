//go:build !linux

package service

import "syscall"

// sysProcAttr starts the proxy in its own process group. There is no parent-death
// signal outside Linux: the control pipe alone ends the proxy when devsandbox exits
// (see Start).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
