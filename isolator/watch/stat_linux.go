package watch

import "syscall"

// ctime is a file's change time in ns: a process can set a file's mtime back, not its
// ctime.
func ctime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
