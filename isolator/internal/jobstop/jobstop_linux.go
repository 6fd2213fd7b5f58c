// Package jobstop is what devsandbox's processes share to act as a job of a shell:
// whether stdin is the controlling terminal and the process is in the background,
// whether a child is stopped, and stopping the process itself with the signal a
// native command would stop with.
package jobstop

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Background reports whether this process's group is not the foreground one of its
// controlling terminal (one TIOCGPGRP); false without a controlling terminal.
func Background() bool {
	fd, err := openTTY()
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return !foregroundOf(fd)
}

// Terminal returns this process's controlling terminal, opened read-only, when in is
// that terminal (nil otherwise), and whether this process is in the background of it.
// The caller closes tty.
func Terminal(in *os.File) (tty *os.File, background bool) {
	if in == nil {
		return nil, false
	}
	fd, err := openTTY()
	if err != nil {
		return nil, false
	}
	if !SameDevice(fd, int(in.Fd())) {
		unix.Close(fd)
		return nil, false
	}
	return os.NewFile(uintptr(fd), "/dev/tty"), !foregroundOf(fd)
}

// StartedInBackground reports whether in is the controlling terminal and this
// process is not in its foreground process group.
func StartedInBackground(in *os.File) bool {
	tty, bg := Terminal(in)
	if tty != nil {
		tty.Close()
	}
	return bg
}

// ControllingTerminal reports whether in is this process's controlling terminal.
func ControllingTerminal(in *os.File) bool {
	tty, _ := Terminal(in)
	if tty != nil {
		tty.Close()
	}
	return tty != nil
}

// openTTY opens the controlling terminal read-only, without making it one.
func openTTY() (int, error) {
	return unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
}

// SameDevice reports whether terminal descriptors a and b are the same terminal
// (TIOCGDEV: /dev/tty's own device number is not its terminal's).
func SameDevice(a, b int) bool {
	da, err := unix.IoctlGetUint32(a, unix.TIOCGDEV)
	if err != nil {
		return false
	}
	db, err := unix.IoctlGetUint32(b, unix.TIOCGDEV)
	return err == nil && da == db
}

// foregroundOf reports whether this process's group is the foreground one of the
// terminal fd; true when that cannot be told (fd is not the controlling terminal).
func foregroundOf(fd int) bool {
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err != nil || pg == unix.Getpgrp()
}

// State is the state letter of /proc/pid/stat (R running, S sleeping, D in
// uninterruptible sleep, T stopped, t traced, Z, X dead); 'X' when it is gone.
func State(pid string) byte {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 'X'
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 'X'
	}
	return b[i+2]
}

// StopSelf stops this process with sig (SIGTSTP, SIGTTIN, SIGTTOU) and returns once
// it is continued: the shell then reports the job "Stopped" with status 128+sig, as
// for a native command. The Go runtime keeps its handler for a signal once
// subscribed (signal.Reset does not give back the default action), so the default
// action is set here for the one delivery, behind the runtime's back, and the
// runtime's handler put back after: the signal is sent to this thread (tgkill),
// which takes it on its way out of the call, before the handler is back.
// Any other sig stops the process with SIGSTOP.
func StopSelf(sig syscall.Signal) {
	if sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		_ = unix.Kill(unix.Getpid(), unix.SIGSTOP)
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var dfl, old [4]uint64 // a kernel struct sigaction; zero is SIG_DFL without flags
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		_ = unix.Kill(unix.Getpid(), unix.SIGSTOP)
		return
	}
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
}

// GroupState is State over every thread of pid: 'T' only once each thread is
// stopped (a process is shown stopped as its first thread stops; another, woken by
// the stop in a read of the terminal, may still take input that arrived meanwhile
// before it stops), else the state of the first thread that is not. Threads gone
// ('X': exited, or the process reaped while they are read) are passed over, but a
// process none of whose threads is seen stopped is gone ('X'), never stopped.
func GroupState(pid string) byte {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return State(pid)
	}
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = pid + "/task/" + t.Name()
	}
	return groupState(names, State)
}

// groupState is GroupState over the threads tasks, each read by state.
func groupState(tasks []string, state func(string) byte) byte {
	stopped := false
	for _, t := range tasks {
		switch st := state(t); st {
		case 'T':
			stopped = true
		case 'X':
		default:
			return st
		}
	}
	if !stopped {
		return 'X'
	}
	return 'T'
}

// ErrNotStopped is StopUntil's error when a process kept running after SIGSTOP for
// the whole bound.
var ErrNotStopped = errors.New("a process of the sandbox kept running after SIGSTOP")

// StopBound is how long StopUntil waits for the processes it stops: one in
// uninterruptible sleep (a rename, a write on a slow file system) is waited for up
// to it, then left to stop as it wakes; one still running then is an error.
const StopBound = 2 * time.Second

// NoteAfter is how long a stop may take before devsandbox says what it waits for:
// an ordinary Ctrl-Z is done well within it (medians 45 ms on bwrap, 160-185 ms on
// docker, the slowest of 60 at 345 ms, at a load of 40: docs/performance.md);
// one that waits for a process in uninterruptible sleep takes up to StopBound, and
// that long without a word after Ctrl-Z reads as a hang.
const NoteAfter = 500 * time.Millisecond

// SlowStopNote is what devsandbox says once a stop took NoteAfter.
const SlowStopNote = "stopping the sandbox: waiting for its processes to stop (a write or rename under way completes first; then the sandbox stops, or is ended)"

// StopUntil stops a set of processes and returns once a pass finds each of them
// stopped. pass sends SIGSTOP to each process of the set not stopped yet (StopOne)
// and returns how many of them were running and how many in uninterruptible sleep
// when sent it. One that another continues is stopped again at the next pass; a
// stopped process forks nothing, so a pass that sends no stop ends it. After bound it
// returns nil when only sleeping ones are left (a hung network file system: each
// stops as it wakes, before it runs code of its own) and ErrNotStopped when one
// still runs.
func StopUntil(pass func() (running, sleeping int), bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		running, sleeping := pass()
		if running+sleeping == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if running == 0 {
				return nil
			}
			return ErrNotStopped
		}
		time.Sleep(time.Millisecond) // the targets run on another CPU
	}
}

// StopPass is one pass of StopUntil over pids: StopOne for each, and how many of
// them were running and how many in uninterruptible sleep when sent SIGSTOP. sent,
// when set, is told each pid sent one.
func StopPass(pids []int, sent func(pid int)) (running, sleeping int) {
	for _, pid := range pids {
		s, r, d := stopOne(strconv.Itoa(pid))
		if s && sent != nil {
			sent(pid)
		}
		if r {
			running++
		} else if d {
			sleeping++
		}
	}
	return running, sleeping
}

// stopOne is StopOne; tests replace it (no process sleeps uninterruptibly on demand).
var stopOne = StopOne

// StopOne sends SIGSTOP to pid unless each of its threads is stopped already, or it
// is traced, dead or gone, and reports whether it was sent one and whether it is then
// waited for as running or as sleeping (Pending).
func StopOne(pid string) (sent, running, sleeping bool) {
	st := State(pid)
	if st == 'T' {
		st = GroupState(pid) // each thread, not the first alone
	}
	if strings.IndexByte("TtZXx", st) >= 0 {
		return false, false, false // stopped, traced, dead or gone
	}
	n, err := strconv.Atoi(pid)
	if err != nil || unix.Kill(n, unix.SIGSTOP) != nil {
		return false, false, false
	}
	running, sleeping = Pending(st, func() bool { return VforkWait(pid) })
	return true, running, sleeping
}

// Pending says how a process sent SIGSTOP in state st is waited for: as running, or
// as sleeping (uninterruptible sleep, 'D': the stop takes effect as the sleep ends,
// before the process runs code of its own; its call, a rename, a write, completes
// first, so it is waited for up to the bound). A vfork parent (vfork reports it) also
// sleeps so, for as long as its child, which may be stopped already: it runs nothing
// of its own meanwhile and is not waited for. Pure but for vfork.
func Pending(st byte, vfork func() bool) (running, sleeping bool) {
	if st == 'D' {
		return false, !vfork()
	}
	return true, false
}

// VforkWait reports whether pid sleeps until its vfork child execs or exits.
func VforkWait(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/wchan")
	return err == nil && vforkWchan(b)
}

// vforkWchan reports whether a /proc/PID/wchan of a process in uninterruptible sleep
// is the wait of a vfork parent: wait_for_vfork_done, or kernel_clone itself where
// the compiler inlined that wait into it (Linux 6.x: the scheduler's functions are
// skipped, and kernel_clone sleeps nowhere else itself). Unknown ("0", empty: a
// kernel that does not say) is not: the process is waited for. Pure.
func vforkWchan(b []byte) bool {
	return bytes.Contains(b, []byte("vfork")) || string(bytes.TrimSpace(b)) == "kernel_clone"
}
