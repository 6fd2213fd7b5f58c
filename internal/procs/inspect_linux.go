package procs

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The process inspection the integration suite and the benchmarks share (a test
// program's view of what runs, not the sandbox's): each lists /proc once.

// eachPid calls f with each process's pid and /proc directory.
func eachPid(f func(pid int, dir string)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			f(pid, "/proc/"+e.Name())
		}
	}
}

// statFields are the fields of a /proc/PID/stat line after COMM (STATE first), nil
// when it cannot be read. Pure but for the read.
func statFields(dir string) []string {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// State is pid's state letter ("R", "S", "D", "T", ...), "" when it is gone.
func State(pid int) string {
	if f := statFields("/proc/" + strconv.Itoa(pid)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// Stopped reports whether every thread of pid is stopped (state T): a stop signal
// has taken effect, not only been sent (kill returns before it does, and a thread
// still running may act meanwhile). False when pid is gone.
func Stopped(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		if f := statFields(dir + "/" + task.Name()); len(f) == 0 || f[0] != "T" {
			return false
		}
	}
	return true
}

// Status is pid's /proc/PID/status by field name, each value with its blanks trimmed
// ("State": "T (stopped)", "PPid": "1", "NSpid": "812\t1"); nil when pid is gone.
func Status(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// WithArgs lists the processes whose argv is args, exactly.
func WithArgs(args ...string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	var out []int
	eachPid(func(pid int, dir string) {
		if b, err := os.ReadFile(dir + "/cmdline"); err == nil && string(b) == want {
			out = append(out, pid)
		}
	})
	return out
}

// KillSession sends SIGKILL to every process of session sid (a shell and its jobs);
// sid 0 and 1 are never a test's session and kill nothing.
func KillSession(sid int) {
	if sid <= 1 {
		return
	}
	s := strconv.Itoa(sid)
	eachPid(func(pid int, dir string) {
		if f := statFields(dir); len(f) > 3 && f[3] == s {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	})
}

// OfUserWithEnv lists the processes of uid whose command line (its arguments joined
// by spaces) holds one of cmds and whose environment holds env ("NAME=VALUE").
func OfUserWithEnv(uid int, env string, cmds ...string) []int {
	var out []int
	eachPid(func(pid int, dir string) {
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) != nil || int(st.Uid) != uid {
			return
		}
		b, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			return
		}
		cmd := strings.Join(strings.Split(string(b), "\x00"), " ")
		if !slices.ContainsFunc(cmds, func(c string) bool { return strings.Contains(cmd, c) }) {
			return
		}
		if e, err := os.ReadFile(dir + "/environ"); err == nil && slices.Contains(strings.Split(string(e), "\x00"), env) {
			out = append(out, pid)
		}
	})
	return out
}
