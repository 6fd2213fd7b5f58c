package procs

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/internal/sockpeer"
)

// Proc is a process and its parent.
type Proc struct{ Pid, PPid int }

// List lists the pid and parent pid of every process in /proc, whatever its state.
func List() []Proc {
	var out []Proc
	_ = dirent.ReadDir("/proc", 8192, func(name string, _ byte) bool {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			return true // not a process: self, sys, meminfo, ...
		}
		if ppid := ParentPid(pid); ppid >= 0 {
			out = append(out, Proc{pid, ppid})
		}
		return true
	})
	return out
}

// ParentPid returns pid's parent pid, -1 when it cannot be read. A process whose
// parent is 0 was started from outside the pid namespace: by the engine (an exec), or
// it is the namespace's pid 1.
func ParentPid(pid int) int {
	b, err := rawfile.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	return statPPid(b)
}

// statPPid is the parent pid in the start of a /proc/PID/stat line, "PID (COMM)
// STATE PPID ...", -1 when it has none. COMM may hold spaces and parentheses: the
// fields start after its last ')'. Pure.
func statPPid(line []byte) int {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(line[i+1:])
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return n
}

// Strays returns the processes of ps, other than self (the namespace's pid 1), that
// descend from no process with parent pid 0 (exec'd by the engine): what an ended
// exec left, adopted by self. A parent missing from ps (started or gone while ps was
// read) is looked up again with lookup (-1: gone). Pure but for lookup.
func Strays(ps []Proc, self int, lookup func(pid int) int) []int {
	parent := map[int]int{}
	for _, p := range ps {
		parent[p.Pid] = p.PPid
	}
	var out []int
	for _, p := range ps {
		if p.Pid == self {
			continue
		}
		q, exec := p.Pid, false
		for i := 0; i < len(ps)+2; i++ {
			pp, known := parent[q]
			if !known {
				if pp = lookup(q); pp < 0 {
					break // gone
				}
			}
			if pp == self {
				break // adopted by self
			}
			if pp == 0 {
				exec = true
				break
			}
			q = pp
		}
		if !exec {
			out = append(out, p.Pid)
		}
	}
	return out
}

// KillStrays kills every stray (Strays: what ended execs left, whatever its state)
// with SIGKILL until none is left or limit has passed, and reports whether none is
// left. self, the namespace's pid 1, reaps them.
func KillStrays(self int, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		strays := Strays(List(), self, ParentPid)
		if len(strays) == 0 {
			return true
		}
		for _, p := range strays {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
	return false
}

// ReapOrphans waits for every child of this process as it exits, never returning:
// the loop of a pid namespace's pid 1, which adopts every orphan (KillStrays' too).
func ReapOrphans() {
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err != nil && !errors.Is(err, unix.EINTR) {
			time.Sleep(time.Second) // ECHILD: none yet
		}
	}
}

// EnginePeer reports whether the process at the other end of c, which connected to
// a socket this process listens on, was started from outside this pid namespace
// (ParentPid 0: by the engine, an exec), and returns its pid and a pidfd of that
// very process (SO_PEERPIDFD, Linux 6.5), which the caller closes when it is 0 or
// more. The connecting process must still run once its parent is read, so that what
// was read at its pid is its own and not a later process's that took the number.
// On an older kernel the pidfd is opened by the pid once it is judged, as before
// (-1 before Linux 5.3).
func EnginePeer(c *net.UnixConn) (pid, pidfd int, ok bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, -1, false
	}
	var l *sockpeer.Listener
	var cerr error
	if err := raw.Control(func(fd uintptr) { l, cerr = sockpeer.Of(int(fd)) }); err != nil || cerr != nil {
		return 0, -1, false
	}
	defer l.Close()
	pid = int(l.Pid)
	if pid <= 0 || ParentPid(pid) != 0 || l.Exited() {
		return pid, -1, false
	}
	if fd := l.Pidfd(); fd >= 0 {
		if pidfd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return pid, -1, false
		}
		return pid, pidfd, true
	}
	if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
		pidfd = -1
	}
	return pid, pidfd, true
}

// PeerPid returns the pid of the process at the other end of c.
func PeerPid(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Pid), nil
}
