//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// orphanedBwraps returns the test user's bwrap processes that name root (in their
// argv, their working directory or a descriptor) and whose parent is not a bwrap or
// the devsandbox under test: a run's bwrap, or bwrap's child before its exec, left
// behind by a run that has ended (its parent gone, it is the reaper's). Neither
// docker nor krun runs bwrap, and a bwrap of a run still going has devsandbox or
// bwrap as its parent: what this finds is certainly a leak. Each entry is the
// process's pid and argv. A process found gets until the deadline to exit (one
// killed just now is still dying); one still there then is killed.
func orphanedBwraps(root string, deadline time.Time) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []string{"listing /proc: " + err.Error()}
	}
	var left []string
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || !isOrphanedBwrap(pid, root) {
			continue
		}
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone
		}
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if isOrphanedBwrap(pid, root) && !exitsBy(pidfd, deadline) {
			left = append(left, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " ")))
			// The suite goes on without it, and without its children (a bwrap
			// that ran its command).
			_ = unix.PidfdSendSignal(pidfd, unix.SIGSTOP, nil, 0)
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
			for _, k := range strings.Fields(string(kids)) {
				if n, err := strconv.Atoi(k); err == nil {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pidfd)
	}
	return left
}

func isOrphanedBwrap(pid int, root string) bool {
	dir := fmt.Sprintf("/proc/%d", pid)
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || int(st.Uid) != it.uid || exeBase(dir) != "bwrap" {
		return false
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:])) // state ppid ...
	if len(f) < 2 || f[0] == "Z" {
		return false
	}
	parent := exeBase("/proc/" + f[1])
	if parent == "bwrap" || parent == filepath.Base(it.bin) {
		return false
	}
	return names(dir, root)
}

// names reports whether the process at /proc/PID dir has root, or a path below it,
// in its argv, as its working directory or open as a descriptor.
func names(dir, root string) bool {
	below := func(p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	if argv, err := os.ReadFile(dir + "/cmdline"); err == nil {
		for _, a := range strings.Split(string(argv), "\x00") {
			if strings.Contains(a, root) {
				return true
			}
		}
	}
	if cwd, err := os.Readlink(dir + "/cwd"); err == nil && below(cwd) {
		return true
	}
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && below(l) {
			return true
		}
	}
	return false
}

func exeBase(dir string) string {
	exe, err := os.Readlink(dir + "/exe")
	if err != nil {
		return ""
	}
	return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
}

// exitsBy reports whether the process of pidfd exits before deadline.
func exitsBy(pidfd int, deadline time.Time) bool {
	for {
		ms := max(int(time.Until(deadline).Milliseconds()), 0)
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		default:
			return n > 0
		}
	}
}

// checkNoOrphans fails t when a bwrap of the test's runs, naming root, outlived
// its devsandbox (orphanedBwraps).
func checkNoOrphans(t testing.TB, root string) {
	t.Helper()
	if left := orphanedBwraps(root, time.Now().Add(5*time.Second)); len(left) > 0 {
		t.Errorf("bwrap processes of the test's runs were left running after devsandbox exited (killed now):\n  %s", strings.Join(left, "\n  "))
	}
}
