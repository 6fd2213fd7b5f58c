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

	"golang.org/x/sys/unix"
)

// A daemon the command started (setsid, then its parent gone: an orphan of the
// sandbox's init, in a session of its own) ends with the run once the command
// exited by itself, on every isolator: it is not running when devsandbox returns.
// bwrap: the init is the pid namespace's pid 1, whose end takes the namespace with
// it; docker one-shot: the container goes with the run; a kept container stays,
// but the session's processes end with the session (docs: "Processes do not
// outlive their session"). The daemon is found on the host by a name only it has
// (its script's), so a kept container's own processes and other tests' do not count.
func TestDaemonEndsWithTheRun(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		modes := map[string][]string{"one-shot": nil}
		if iso != "bwrap" && iso != "krun" {
			modes["kept"] = []string{"--keep-container"}
		}
		for name, flags := range modes {
			t.Run(name, func(t *testing.T) {
				p := newProject(t)
				flags := append([]string{"--egress=none"}, flags...)
				if len(flags) > 1 {
					settle(p, iso, flags)
				}
				var b [6]byte
				if _, err := unix.Getrandom(b[:], 0); err != nil {
					t.Fatal(err)
				}
				daemon := fmt.Sprintf("daemon-%x.sh", b)
				p.write("proj/"+daemon, "echo up >started\nwhile :; do sleep 1; done\n")
				// The command waits until the daemon runs, then exits 0 by itself.
				script := `setsid sh -c 'sh ./` + daemon + ` </dev/null >/dev/null 2>&1 &'; ` +
					`while [ ! -e started ]; do sleep 0.02; done`
				if r := p.sandbox(iso, flags, script); r.code != 0 {
					t.Fatalf("the run:\n%s", r)
				}
				if left := running(daemon); len(left) > 0 {
					t.Errorf("a daemon the command started was still running when devsandbox returned (killed now):\n  %s", strings.Join(left, "\n  "))
				}
			})
		}
	})
}

// running returns the processes on this host, not zombies, whose argv names name,
// each as its pid and argv, and kills them.
func running(name string) []string {
	var left []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		argv, err := os.ReadFile(d + "/cmdline")
		if err != nil || !strings.Contains(string(argv), name) {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) == 0 || f[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		left = append(left, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " ")))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return left
}
