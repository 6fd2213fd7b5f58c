package sandboxinit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"golang.org/x/sys/unix"
)

// freezer stops and continues what a session runs while devsandbox is stopped by a
// shell's job control, where the engine cannot pause the container (a rootless
// engine on cgroup v1, podman with cgroupfs) or must not (an exec in a kept
// container, whose pause would freeze the container's other sessions): on the host's
// wire.FrameStop it stops every process of the session, each thread of each, as
// bwrap's job control does on the host (jobstop.StopUntil: those in uninterruptible
// sleep are waited for up to jobstop.StopBound), then says so on its stderr with the
// frame's token (wire.StopMarker), which the command cannot read and so cannot fake;
// on wire.FrameGo it continues the processes it stopped, and only those (a job the
// command's own shell had stopped stays stopped).
//
// The session's processes are members: for the run role (the container's first
// process) every process of the container's pid namespace but the init itself, its
// ancestors (a runtime's own init, in a microVM) and the kernel's threads; for the
// session role (an exec in a kept container) the init's descendants, which are
// every process the command started, wherever it went (its own process group or
// session, an orphan: the init is their child subreaper).
type freezer struct {
	members func() []int
	// ended reports whether the command has exited (nil: never asked).
	ended   func() bool
	stopped []int // in the order they were stopped
	out     io.Writer
}

func newFreezer(role string, out io.Writer, ended func() bool) *freezer {
	f := &freezer{out: out, members: namespaceMembers, ended: ended}
	if role == "session" {
		f.members = func() []int { return descendantsOf(os.Getpid()) }
	}
	return f
}

// stop stops the session's processes and reports on out, with token, whether each
// was seen stopped (the host stops devsandbox only then), or that the command had
// ended by then (what was stopped is continued).
func (f *freezer) stop(token []byte) {
	if !wire.ValidToken(token) {
		return // not the host's: nothing to answer
	}
	err := jobstop.StopUntil(func() (running, sleeping int) {
		return jobstop.StopPass(f.members(), func(pid int) {
			if !slices.Contains(f.stopped, pid) {
				f.stopped = append(f.stopped, pid)
			}
		})
	}, jobstop.StopBound)
	state := wire.StopStopped
	switch {
	case f.ended != nil && f.ended():
		f.cont()
		state = wire.StopEnded
	case err != nil:
		state = wire.StopRunning
	}
	fmt.Fprint(f.out, wire.StopAnswer(string(token), state))
}

// exitWatch returns whether the child pid has exited, reaped or not: its pidfd,
// opened now (before anything can reap it), polls readable then; pid must be a child
// not waited for yet. Without pidfds (Linux before 5.3) its /proc state is read: a
// zombie, or gone (its pid could be another process's by then only after the pid
// numbers wrapped around).
func exitWatch(pid int) func() bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return func() bool {
			st := jobstop.State(strconv.Itoa(pid))
			return st == 'Z' || st == 'X'
		}
	}
	return func() bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err == nil && n > 0
	}
}

// cont continues the processes stop stopped, the last stopped first: a child is
// running again before its parent, which therefore finds no stopped child to report
// when it waits with WUNTRACED (a shell would take the terminal back from its job).
func (f *freezer) cont() {
	for i := len(f.stopped) - 1; i >= 0; i-- {
		_ = syscall.Kill(f.stopped[i], syscall.SIGCONT)
	}
	f.stopped = f.stopped[:0]
}

// namespaceMembers lists every process of this pid namespace but this one, its
// ancestors and the kernel's threads.
func namespaceMembers() []int {
	self := os.Getpid()
	skip := map[int]bool{self: true}
	for p := procs.ParentPid(self); p > 0 && !skip[p]; p = procs.ParentPid(p) {
		skip[p] = true
	}
	var out []int
	for _, p := range procs.List() {
		if !skip[p.Pid] && !kernelThread(p.Pid) {
			out = append(out, p.Pid)
		}
	}
	return out
}

// kernelThread reports whether pid is a thread of the kernel (PF_KTHREAD in the
// flags of /proc/PID/stat): a guest kernel's, in a microVM.
func kernelThread(pid int) bool {
	b, err := rawfile.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	return statFlags(b)&pfKthread != 0
}

const pfKthread = 0x00200000

// statFlags is the flags field (the ninth) of a /proc/PID/stat line, 0 when it has
// none. Pure.
func statFlags(line []byte) uint64 {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(line[i+1:])
	if len(f) < 7 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[6]), 10, 64)
	return n
}
