package lastingthread

import "golang.org/x/sys/unix"

// onMainThread reports whether the caller runs on the process's first thread (its
// id is the process's).
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }
