package main

import "syscall"

// proxySysProcAttr starts the proxy in its own process group, with SIGTERM as its
// parent-death signal (see spawnProxy).
func proxySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
