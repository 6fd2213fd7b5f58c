package sandboxinit

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv selects a helper role of the test binary (runHelper); the roles change
// process-wide state (descriptors, SIGCHLD, children), so each runs in a process of
// its own.
const helperEnv = "DEVSANDBOX_INIT_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

func runHelper(role string) int {
	switch role {
	case "close":
		// Descriptors 3..9 are open (the test passes them); 5 is kept.
		if err := closeInherited(5); err != nil {
			fmt.Println(err)
			return 1
		}
		var open []string
		for fd := 3; fd < 64; fd++ {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
				open = append(open, strconv.Itoa(fd))
			}
		}
		fmt.Println(strings.Join(open, " "))
		return 0
	case "reap":
		r := newReaper()
		// A child that exits at once, before the reaper runs, and the command.
		other := forkSh("exit 3")
		pid := forkSh(os.Getenv("HELPER_SCRIPT"))
		exited := make(chan int, 1)
		go r.reap(pid, exited)
		code := <-exited
		// The other child is reaped too, by then or soon after.
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if err := syscall.Kill(other, 0); err != nil {
				break
			}
			if time.Now().After(end) {
				fmt.Println("the other child was not reaped")
				return 1
			}
		}
		fmt.Println(code)
		return 0
	case "main":
		// The bwrap init, with the command the test names.
		return Main([]string{"--", "/bin/sh", "-c", os.Getenv("HELPER_SCRIPT")}, os.Stderr)
	}
	return 2
}

func forkSh(script string) int {
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
	if err != nil {
		panic(err)
	}
	return pid
}

func helper(t *testing.T, role string, extra []*os.File, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+role), env...)
	cmd.ExtraFiles = extra
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v: %s", role, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Every inherited descriptor above stderr is closed but the one kept.
func TestCloseInherited(t *testing.T) {
	var files []*os.File
	for i := 0; i < 7; i++ { // descriptors 3..9 in the helper
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	got := helper(t, "close", files)
	fields := strings.Fields(got)
	sort.Strings(fields)
	// The Go runtime may hold descriptors of its own above 9; none of 3..9 but 5.
	for _, f := range fields {
		if n, _ := strconv.Atoi(f); n >= 3 && n <= 9 && n != 5 {
			t.Fatalf("descriptor %d is still open after closeInherited (open: %s)", n, got)
		}
	}
	if !strings.Contains(" "+got+" ", " 5 ") {
		t.Fatalf("the kept descriptor 5 was closed (open: %q)", got)
	}
}

// The reaper reports the command's status (128+N for a signal) and reaps the
// other children too.
func TestReaper(t *testing.T) {
	for _, c := range []struct {
		script string
		want   string
	}{
		{"exit 7", "7"},
		{"exit 0", "0"},
		{"sleep 0.05; exit 4", "4"},
		{"kill -TERM $$", strconv.Itoa(128 + int(syscall.SIGTERM))},
	} {
		if got := helper(t, "reap", nil, "HELPER_SCRIPT="+c.script); got != c.want {
			t.Errorf("%q: reaper reported %q, want %q", c.script, got, c.want)
		}
	}
}
