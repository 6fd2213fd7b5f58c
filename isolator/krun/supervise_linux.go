package krun

import "syscall"

// serviceSysProcAttr makes SIGTERM the service's parent-death signal: it dies with
// its supervisor (see Supervise).
func serviceSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
