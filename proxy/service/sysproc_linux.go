package service

import "syscall"

// sysProcAttr starts the proxy in its own process group, with SIGTERM as its
// parent-death signal (see Start).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
