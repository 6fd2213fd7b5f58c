// Package nocore keeps devsandbox's own processes from dumping core.
//
// devsandbox, its isolator helpers and the host proxy hold what a sandbox must never
// read: the run's secret values, the proxy's injected credentials, the MITM CA's key.
// A core dump is a copy of that memory in a file, and with the kernel's default
// core_pattern ("core", a relative name) the file lands in the crashing process's
// working directory, which for devsandbox is the project: the directory the sandbox
// reads and writes. A Go program dumps core on a fatal signal or a fatal error when
// GOTRACEBACK=crash is set and RLIMIT_CORE allows it, both a developer's ordinary
// settings; TestLauncherCoreDumpHoldsNoSecret found the secret in such a core in the
// project on bwrap and docker.
//
// Off lowers the soft RLIMIT_CORE to 0. Only the soft limit: the hard one stays, so a
// command in a sandbox may raise its own again (`ulimit -c unlimited`); the processes
// devsandbox starts inherit the 0 until they do.
package nocore

import "golang.org/x/sys/unix"

// Off sets the calling process's soft RLIMIT_CORE to 0, so it writes no core file
// whatever ends it. A failure is returned for the caller to report: lowering a soft
// limit is always permitted, so it means a kernel without RLIMIT_CORE.
func Off() error {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &l); err != nil {
		return err
	}
	if l.Cur == 0 {
		return nil
	}
	l.Cur = 0
	return unix.Setrlimit(unix.RLIMIT_CORE, &l)
}
