package sandboxinit

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/procs"
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
	for _, p := range procs.List() {
		children[p.PPid] = append(children[p.PPid], p.Pid)
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
