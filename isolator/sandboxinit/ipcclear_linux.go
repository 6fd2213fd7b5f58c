package sandboxinit

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// ipcDirs are the kept container's file systems of shared memory and POSIX message
// queues (the engine's /dev/shm tmpfs and /dev/mqueue): they outlive sessions.
var ipcDirs = []string{"/dev/shm", "/dev/mqueue"}

// clearIPC removes what sessions left in the kept container's IPC namespace: the
// files of /dev/shm, the POSIX message queues, and every System V shared memory
// segment, semaphore set and message queue. A later session's tool that attaches to
// an object by a well-known name or key then makes its own instead of finding one an
// ended session planted or filled. A failure is only logged. Not a fresh IPC
// namespace per session: unshare(CLONE_NEWIPC) needs CAP_SYS_ADMIN, which no process
// of the container holds.
func clearIPC() {
	for _, dir := range ipcDirs {
		if _, err := os.Lstat(dir); err == nil {
			emptyDir(dir)
		}
	}
	for _, k := range []struct {
		table string
		rm    func(id int) error
	}{
		{"/proc/sysvipc/shm", func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
		{"/proc/sysvipc/sem", func(id int) error { return ipcRmid(unix.SYS_SEMCTL, id, 0, unix.IPC_RMID) }},
		{"/proc/sysvipc/msg", func(id int) error { return ipcRmid(unix.SYS_MSGCTL, id, unix.IPC_RMID, 0) }},
	} {
		b, err := rawfile.ReadFile(k.table)
		if err != nil {
			continue // no System V IPC in this kernel
		}
		for _, id := range sysvIDs(b) {
			if err := k.rm(id); err != nil && err != unix.EINVAL && err != unix.EIDRM {
				say(os.Stderr, "devsandbox-init", "removing %s id %d: %v", k.table, id, err)
			}
		}
	}
}

// ipcRmid calls semctl(id, a, b) or msgctl(id, a, b) with IPC_RMID in its place.
func ipcRmid(trap uintptr, id, a, b int) error {
	if _, _, e := unix.Syscall(trap, uintptr(id), uintptr(a), uintptr(b)); e != 0 {
		return e
	}
	return nil
}

// sysvIDs returns the ids (the second column) of a /proc/sysvipc table, whose first
// line names the columns. Pure.
func sysvIDs(table []byte) []int {
	var ids []int
	lines := bytes.Split(table, []byte("\n"))
	for _, line := range lines[min(1, len(lines)):] {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		if id, err := strconv.Atoi(string(f[1])); err == nil && id >= 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
