package sandboxinit

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// killSubtree SIGKILLs every process below this one and reaps them, until the kernel
// reports that this process has no child left (wait4: ECHILD). The caller is a child
// subreaper, so every orphan of its subtree is its child: no child means no
// descendant, whatever state a process was in (a zombie leader whose other threads
// run included). The pids to kill are read from /proc; the kernel's answer, not the
// listing, decides that the subtree is empty. It gives up after limit, leaving the
// rest to the kept container's keeper (see keeper), and reports whether it was done.
func killSubtree(limit time.Duration) bool {
	self := os.Getpid()
	end := time.Now().Add(limit)
	for {
		// Most commands leave nothing: then the kernel says so at once, and /proc
		// need not be read.
		if noChild() {
			return true
		}
		for _, p := range descendantsOf(self) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if noChild() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noChild reaps what has exited below this process and reports whether no child is
// left (wait4: ECHILD).
func noChild() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return true
		}
		if pid <= 0 {
			return false
		}
	}
}

// descendantsOf lists the pids below pid, from every /proc/PID/stat, whatever their
// state: a process whose leader thread exited shows as a zombie ("Z") while its other
// threads run, and SIGKILL to its pid ends them all.
func descendantsOf(pid int) []int {
	children := map[int][]int{}
	for _, p := range processes() {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, k := range children[c] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

type process struct{ pid, ppid int }

// processes lists the pid and parent pid of every process in /proc: one listing of
// /proc and one read of each /proc/PID/stat (parentPid), with the system calls
// themselves. A keeper's sweep, on a session's critical path, lists them at each
// registration; filepath.Glob("/proc/[0-9]*/stat") opened and listed every
// /proc/PID directory to find its stat file, and os.File registers each file it
// opens with the runtime's poller.
func processes() []process {
	var out []process
	_ = dirent.ReadDir("/proc", 8192, func(name string, _ byte) bool {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			return true // not a process: self, sys, meminfo, ...
		}
		if ppid := parentPid(pid); ppid >= 0 {
			out = append(out, process{pid, ppid})
		}
		return true
	})
	return out
}

// parentPid returns pid's parent pid, -1 when it cannot be read.
func parentPid(pid int) int {
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
