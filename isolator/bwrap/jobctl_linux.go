package bwrap

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"golang.org/x/sys/unix"
)

// jobControl stops and continues the sandbox with devsandbox, as a shell's job
// control would stop and continue the command run without a sandbox. The sandbox
// is in a session of its own (--new-session), without a controlling terminal, so the
// kernel's job control never reaches it: without this, a run stopped with Ctrl-Z
// (or a read of the terminal from the background) stops devsandbox alone, and the
// command goes on running and reading the terminal, keys typed for the shell (a
// sudo password) included.
//
// On SIGTSTP, and on SIGTTIN or SIGTTOU while devsandbox is in the background, every
// process of the sandbox's pid namespace is stopped (SIGSTOP, until each is seen
// stopped), then devsandbox stops itself (with the signal, 128+sig as a native command), and the shell reports the job
// stopped. On SIGCONT the sandbox
// is continued, unless the command's stdin is the controlling terminal and
// devsandbox is not its foreground process group (`bg`): the command could then read
// keys typed for the shell, so devsandbox keeps it stopped and stops itself again,
// as the kernel stops a background job that reads its terminal; `fg`
// continues it. A run started in the background gets /dev/null on stdin instead
// (stdinTerminal), so a build run with & goes on.
type jobControl struct {
	c chan os.Signal
	// stdinTerm is set when the command's stdin is devsandbox's controlling terminal.
	stdinTerm bool
	stopped   bool
	// bwrapPid's process group (bwrapPgid, its guard's) is stopped while the
	// command is not known yet.
	bwrapPid, bwrapPgid, cmdPid int
	// cmdPidfd is a pidfd of the command the init started, from its report (nil:
	// none; commandEnded then reads the init's children).
	cmdPidfd *os.File
	// stoppedProcs are the processes of the sandbox the stop sent SIGSTOP, in that
	// order: the resume continues these, and only these, each through a pidfd taken
	// at the stop (a pid alone may be the host's by the time fg comes).
	stoppedProcs []stoppedProc
	// Seams for tests of handle, nil in a run: stopAll in place of stopTree, self
	// in place of stopping devsandbox itself (jobstop.StopSelf), background in
	// place of jobstop.Background, ended in place of commandEnded.
	stopAll    func() error
	self       func(syscall.Signal)
	background func() bool
	ended      func() bool
}

// handle acts on s. kill ends the sandbox (SIGKILL to bwrap) when a process of it
// cannot be stopped; pending returns a forwarded signal caught meanwhile, if any.
func (j *jobControl) handle(s os.Signal, warn func(string, ...any), kill func(), pending func() (os.Signal, bool), forward func(os.Signal)) {
	sig := s.(syscall.Signal)
	switch sig {
	case syscall.SIGCONT:
		if !j.stopped {
			return
		}
		if j.stdinTerm && j.inBackground() {
			// `bg`, or `kill %1` (the signal then comes first): a signal to forward
			// continues the sandbox so that the command sees it.
			if s, ok := pending(); ok {
				forward(s)
				break
			}
			j.stopSelf(syscall.SIGTTIN)
			return
		}
	case syscall.SIGTTIN, syscall.SIGTTOU:
		if j.stopped || !j.inBackground() {
			return // a late copy of one already acted on
		}
		fallthrough
	default:
		if j.stopped {
			j.stopSelf(sig)
			return
		}
		stop := j.stopTree
		if j.stopAll != nil {
			stop = j.stopAll
		}
		// Said only in the foreground: written from the background, with the
		// terminal's tostop, it would be one more SIGTTOU.
		note := time.AfterFunc(jobstop.NoteAfter, func() {
			if !j.inBackground() {
				warn("%s", jobstop.SlowStopNote)
			}
		})
		err := stop()
		note.Stop()
		if err != nil {
			warn("the sandbox is killed: devsandbox was stopped, and %v, where it could read your terminal", err)
			kill()
			return
		}
		if j.commandEnded() {
			// The command ended as the stop came: the shell would show a job
			// stopped whose command is over (a native command that exits as Ctrl-Z
			// comes is reported exited). What the stop stopped goes on (the init,
			// which exits with the command's status), and devsandbox does not stop.
			break
		}
		j.stopped = true
		j.stopSelf(sig)
		return
	}
	j.stopped = false
	j.resume()
}

// stopTree stops every process of the sandbox and returns once each is seen stopped,
// every thread of it (jobstop.StopUntil). One in uninterruptible sleep is sent the
// stop, which takes effect as it wakes (its call, a rename, a write, completes
// first): it is waited for as the others, up to jobstop.StopBound, then left to stop
// as it wakes (a hung network file system); a vfork parent, which sleeps so for as
// long as its stopped child, is not waited for. One still running after the bound is
// an error. A process that another one continues is stopped again.
func (j *jobControl) stopTree() error {
	return jobstop.StopUntil(func() (int, int) { return j.signalTree(syscall.SIGSTOP) }, jobstop.StopBound)
}

// resume continues what the stop stopped: bwrap's process group (and without a pid
// namespace of the sandbox's own, the command's), then each process of the sandbox
// the stop sent SIGSTOP, the last stopped first (a child runs again before its
// parent, which then finds no stopped child when it waits with WUNTRACED). A job the
// command's own shell had stopped was not sent one, and stays stopped. A process the
// stop stopped that died meanwhile is not continued: its pid may be a host process's
// now (stoppedProc.resume).
func (j *jobControl) resume() {
	_ = syscall.Kill(-j.bwrapPgid, syscall.SIGCONT)
	if _, ok := j.namespace(); !ok && j.cmdPid > 0 {
		_ = syscall.Kill(-j.cmdPid, syscall.SIGCONT)
	}
	for i := len(j.stoppedProcs) - 1; i >= 0; i-- {
		j.stoppedProcs[i].resume()
	}
	j.release()
}

// release closes the pidfds of the processes the stop stopped, without continuing
// them (the run is over, or they were continued).
func (j *jobControl) release() {
	if j == nil {
		return
	}
	for _, p := range j.stoppedProcs {
		p.close()
	}
	j.stoppedProcs = j.stoppedProcs[:0]
}

// stoppedProc is a process of the sandbox the stop sent SIGSTOP: its pid, and a
// pidfd of it (-1 where the kernel has none: then ns, the sandbox's pid namespace,
// is checked again at the resume).
type stoppedProc struct {
	pid, pidfd int
	ns         uint64
}

// record records pid, of the sandbox's pid namespace ns, which the stop has just
// sent SIGSTOP. The pidfd is taken now and the pid's namespace checked after it: the
// pidfd then names a process of the sandbox, or one already gone, which no signal
// reaches. A pid recorded already is kept, unless its process is gone (the pid is
// then a new process of the sandbox's, which the pass found).
func (j *jobControl) record(pid int, ns uint64) {
	p := stoppedProc{pid: pid, pidfd: -1, ns: ns}
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		p.pidfd = fd
	}
	if in, err := pidNamespace(strconv.Itoa(pid)); err != nil || in != ns {
		p.close()
		return // gone, and its pid another process's already
	}
	if i := slices.IndexFunc(j.stoppedProcs, func(q stoppedProc) bool { return q.pid == pid }); i >= 0 {
		if j.stoppedProcs[i].alive() {
			p.close()
			return
		}
		j.stoppedProcs[i].close()
		j.stoppedProcs = slices.Delete(j.stoppedProcs, i, i+1)
	}
	j.stoppedProcs = append(j.stoppedProcs, p)
}

// alive reports whether the process recorded is still there (without a pidfd:
// whether its pid is still one of the sandbox's).
func (p stoppedProc) alive() bool {
	if p.pidfd >= 0 {
		return unix.PidfdSendSignal(p.pidfd, 0, nil, 0) == nil
	}
	in, err := pidNamespace(strconv.Itoa(p.pid))
	return err == nil && in == p.ns
}

// resume sends the process SIGCONT and closes its pidfd. Through the pidfd, a
// process that is gone gets nothing (ESRCH), whoever has its pid now. Without one
// (a kernel before 5.3), the pid is continued only while it is still in the
// sandbox's pid namespace, read just before, as the stop itself found it.
func (p stoppedProc) resume() {
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGCONT, nil, 0)
		p.close()
		return
	}
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGCONT)
	}
}

func (p stoppedProc) close() {
	if p.pidfd >= 0 {
		_ = unix.Close(p.pidfd)
	}
}

// signalTree sends sig to bwrap's process group, then to each process of the
// sandbox's pid namespace (for SIGSTOP, each not stopped yet: jobstop.StopOne; those
// sent one are recorded for resume). The namespace is the command's, or before the
// init reports the command, that of bwrap's child (bwrap, stopped first, starts no
// other). Without one distinct from devsandbox's it signals the command's process
// group. For SIGSTOP, it returns how many were running and how many in
// uninterruptible sleep when sent it.
func (j *jobControl) signalTree(sig syscall.Signal) (running, sleeping int) {
	_ = syscall.Kill(-j.bwrapPgid, sig)
	ns, ok := j.namespace()
	if !ok {
		if j.cmdPid > 0 {
			_ = syscall.Kill(-j.cmdPid, sig)
		}
		return 0, 0
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if in, err := pidNamespace(e.Name()); err != nil || in != ns {
			continue
		}
		if sig != syscall.SIGSTOP {
			_ = syscall.Kill(pid, sig)
			continue
		}
		pids = append(pids, pid)
	}
	return jobstop.StopPass(pids, func(pid int) { j.record(pid, ns) })
}

// namespace is the sandbox's pid namespace, when it has one of its own.
func (j *jobControl) namespace() (uint64, bool) {
	pid := strconv.Itoa(j.cmdPid)
	if j.cmdPid == 0 {
		b := strconv.Itoa(j.bwrapPid)
		kids, err := os.ReadFile("/proc/" + b + "/task/" + b + "/children")
		f := strings.Fields(string(kids))
		if err != nil || len(f) == 0 {
			return 0, false
		}
		pid = f[0]
	}
	ns, err := pidNamespace(pid)
	own, owned := pidNamespace("self")
	return ns, err == nil && owned == nil && ns != own
}

// commandEnded reports, once the stop has stopped every process of the sandbox,
// whether the command had ended by then: the init (cmdPid, the sandbox's pid 1) is
// gone or exiting, or the command has exited, reaped or not, which the pidfd of it
// the init's report carried tells (it polls readable), whatever other children the
// init has (the command's orphans, a publisher of a port). Nothing stopped can end
// or start a process, so the answer holds until the resume. Before the init reported
// (cmdPid 0) the command has not started. Without the command's pidfd (a kernel
// without pidfds, or the command gone before the report) it is the init's first
// child, a zombie or reaped, and a command reaped by an init that has other children
// reads as running: the run is then stopped as before, and fg ends it.
func (j *jobControl) commandEnded() bool {
	if j.ended != nil {
		return j.ended()
	}
	if j.cmdPid <= 0 {
		return false
	}
	if exited, ok := fileExited(j.cmdPidfd); ok {
		if exited {
			return true
		}
		state, _, ok := procStat(j.cmdPid) // the init gone: the command with it
		return !ok || state == 'Z' || state == 'X'
	}
	return initEnded(j.cmdPid)
}

// fileExited reports whether the process of pidfd f has exited (ok false: f is nil,
// or cannot tell).
func fileExited(f *os.File) (exited, ok bool) {
	if f == nil {
		return false, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	var perr error
	if err := rc.Control(func(fd uintptr) { exited, perr = pidfdExited(fd) }); err != nil || perr != nil {
		return false, false
	}
	return exited, true
}

// initEnded reports whether the init pid has ended or its command (its first child,
// the earliest started) has: pid or that child is gone or a zombie, or pid has no
// child left.
func initEnded(pid int) bool {
	state, _, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return true
	}
	first, firstStart := 0, uint64(0)
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return true
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if _, start, ok := procStat(c); ok && (first == 0 || start < firstStart) {
				first, firstStart = c, start
			}
		}
	}
	if first == 0 {
		return true
	}
	state, _, ok = procStat(first)
	return !ok || state == 'Z' || state == 'X'
}

// procStat is the state and start time of /proc/pid/stat.
func procStat(pid int) (state byte, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0][0], start, err == nil
}

// pidNamespace is the pid namespace of /proc/pid (its inode).
func pidNamespace(pid string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+pid+"/ns/pid", &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// stopSelf stops devsandbox with sig (jobstop.StopSelf): the shell reports the job
// stopped with status 128+sig, as for a native command.
func (j *jobControl) stopSelf(sig syscall.Signal) {
	if j.self != nil {
		j.self(sig)
		return
	}
	jobstop.StopSelf(sig)
}

// inBackground reports whether devsandbox is in the background of its terminal
// (jobstop.Background).
func (j *jobControl) inBackground() bool {
	if j.background != nil {
		return j.background()
	}
	return jobstop.Background()
}
