package sandboxinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
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
		return reapHelper(os.Getenv("HELPER_CASE"), os.Getenv("HELPER_SCRIPT"))
	case "container":
		// The container init (role run, not framed), with the command the test names.
		return ContainerMain([]string{"--", "/bin/sh", "-c", os.Getenv("HELPER_SCRIPT")}, os.Stderr)
	case "nsholder":
		return nsHolder()
	case "freezer-run":
		return freezerRun()
	case "main":
		// The bwrap init, with the command the test names.
		return Main([]string{"--", "/bin/sh", "-c", os.Getenv("HELPER_SCRIPT")}, os.Stderr)
	case "main-await":
		// The bwrap init reporting on descriptor 3 and waiting there for the host's
		// go-ahead, with the command the test names.
		return Main([]string{"--ready-fd=3", wire.AwaitGoArg, "--", "/bin/sh", "-c", os.Getenv("HELPER_SCRIPT")}, os.Stderr)
	}
	return 2
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

// The reaper reports the command's status (128+N for a signal), reaps every other
// child and adopted orphan, and reports exactly once. Each case runs in a helper
// process of its own (the reaper waits for any child), which prints the status
// the reaper reported or what went wrong.
func TestReaper(t *testing.T) {
	for _, c := range []struct {
		name, script, want string
	}{
		// The command exits after the reaper started, together with an orphan and
		// while other children still run (the SIGCHLD/pidfd wakeup path).
		{"later", "exit 7", "7"},
		{"later", "exit 0", "0"},
		{"later", "kill -TERM $$", strconv.Itoa(128 + int(syscall.SIGTERM))},
		// The command is the youngest of many children and adopted orphans that
		// all exited before the reaper started: one pass reaps them all.
		{"batch", "exit 4", "4"},
		{"batch", "kill -KILL $$", strconv.Itoa(128 + int(syscall.SIGKILL))},
		// The command was reaped elsewhere and no child is left.
		{"gone", "exit 4", strconv.Itoa(ExitSetupFailed)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := helper(t, "reap", nil, "HELPER_CASE="+c.name, "HELPER_SCRIPT="+c.script); got != c.want {
				t.Errorf("%s %q: reaper reported %q, want %q", c.name, c.script, got, c.want)
			}
		})
	}
}

// reapHelper runs one TestReaper case in the helper process and returns its exit
// code; it prints the status the reaper reported, or what went wrong. It waits for
// children only with WNOWAIT, so every status is left for the reaper to collect.
func reapHelper(name, script string) int {
	fail := func(format string, a ...any) int {
		fmt.Printf(format+"\n", a...)
		return 1
	}
	// As pid 1 of the sandbox, the helper adopts the orphans of its subtree.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	// A failure detector, not synchronisation: a reaper that never finishes a pass
	// would hang the case.
	time.AfterFunc(20*time.Second, func() {
		fmt.Println("the case did not finish within 20s (is the reaper stuck in a pass?)")
		os.Exit(1)
	})
	// Every child is forked from this one thread, so wait4(-1) meets them oldest
	// first: in the batch, the command comes after the other children in one pass.
	runtime.LockOSThread()
	r := newReaper()
	exited := make(chan int, 1)
	var pids []int // every child and orphan the reaper must reap
	switch name {
	case "later":
		// The command, an orphan to be and another child each wait for their own
		// line on their stdin; the command and the orphan get theirs together.
		release, err := newPipes(3)
		if err != nil {
			return fail("%v", err)
		}
		orphans, err := spawnOrphans(`read x <&3; exit 9`, 1, release[0].r)
		if err != nil {
			return fail("%v", err)
		}
		other := spawn(`read x; exit 3`, release[1].r)
		pid := spawn(`read x; `+script, release[2].r)
		pids = append(append(pids, orphans...), other, pid)
		closeReadEnds(release)
		go r.reap(pid, exited)
		settle(r)
		select {
		case code := <-exited:
			return fail("the reaper reported %d before the command exited", code)
		default:
		}
		for _, p := range []*pipe{release[0], release[2]} { // orphan and command
			if _, err := p.w.Write([]byte("\n")); err != nil {
				return fail("%v", err)
			}
		}
		var code int
		select {
		case code = <-exited:
		case <-time.After(10 * time.Second): // a failure detector, not synchronisation
			return fail("the reaper did not report the command's exit within 10s")
		}
		release[1].w.Close() // the other child exits last
		if msg := checkReaped(r, exited, pids); msg != "" {
			return fail("%s", msg)
		}
		fmt.Println(code)
		return 0
	case "batch":
		for i := 0; i < 16; i++ {
			pids = append(pids, spawn("exit 3", nil))
		}
		// The orphans outlive their parent (a shell reaps the jobs that exit
		// before it), until their release pipe is closed.
		release, err := newPipes(1)
		if err != nil {
			return fail("%v", err)
		}
		orphans, err := spawnOrphans(`read x <&3; exit 9`, 8, release[0].r)
		if err != nil {
			return fail("%v", err)
		}
		closeReadEnds(release)
		release[0].w.Close()
		pid := spawn(script, nil)
		pids = append(append(pids, orphans...), pid)
		for _, p := range pids {
			if err := waitChild(p); err != nil {
				return fail("child %d: %v", p, err)
			}
		}
		go r.reap(pid, exited)
	case "gone":
		pid := spawn(script, nil)
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return fail("wait4 %d: %v", pid, err)
		}
		go r.reap(pid, exited)
	default:
		return fail("unknown case %q", name)
	}
	// Everything has exited before the reaper started: its first pass reaps it all.
	settle(r)
	var code int
	select {
	case code = <-exited:
	default:
		return fail("no status reported after a full pass of the reaper")
	}
	if msg := checkReaped(r, exited, pids); msg != "" {
		return fail("%s", msg)
	}
	fmt.Println(code)
	return 0
}

// settle returns once the reaper has run a whole pass that began after settle was
// called: of cap+2 wakeups sent, at least two were received, and the pass before
// the second began after the first was received.
func settle(r *reaper) {
	for i := 0; i < cap(r.chld)+2; i++ {
		r.chld <- syscall.SIGCHLD
	}
}

// checkReaped waits for pids to have exited, lets the reaper run a pass and says
// which of them it left as zombies, or whether it reported a second status.
func checkReaped(r *reaper, exited <-chan int, pids []int) string {
	for _, p := range pids {
		if err := waitChild(p); err != nil && !errors.Is(err, unix.ECHILD) { // ECHILD: reaped already
			return fmt.Sprintf("child %d: %v", p, err)
		}
	}
	settle(r)
	var zombies []string
	for _, p := range pids {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, p, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err == nil && info.Signo != 0 {
			zombies = append(zombies, strconv.Itoa(p))
		}
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err == nil && info.Signo != 0 && len(zombies) == 0 {
		zombies = append(zombies, "(unknown)")
	}
	if len(zombies) > 0 {
		return fmt.Sprintf("the reaper left zombies after a full pass: %s", strings.Join(zombies, " "))
	}
	select {
	case code := <-exited:
		return fmt.Sprintf("the reaper reported a second status %d", code)
	default:
	}
	return ""
}

// waitChild blocks until child pid has exited, without reaping it (ECHILD: it
// was reaped, or is no child).
func waitChild(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

type pipe struct{ r, w *os.File }

func newPipes(n int) ([]*pipe, error) {
	var ps []*pipe
	for i := 0; i < n; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		ps = append(ps, &pipe{r, w})
	}
	return ps, nil
}

func closeReadEnds(ps []*pipe) {
	for _, p := range ps {
		p.r.Close()
	}
}

// spawn starts sh -c script with stdin (or the helper's) and returns its pid.
func spawn(script string, stdin *os.File) int {
	in := uintptr(0)
	if stdin != nil {
		in = stdin.Fd()
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Files: []uintptr{in, 1, 2}})
	if err != nil {
		panic(err)
	}
	return pid
}

// spawnOrphans starts a child that starts n background jobs running script (with
// fd 3 = extra, when given) and exits; it returns the jobs' pids, which are the
// helper's children (adopted orphans) once their parent has exited, and the
// parent's pid.
func spawnOrphans(script string, n int, extra *os.File) ([]int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	files := []uintptr{0, w.Fd(), 2}
	if extra != nil {
		files = append(files, extra.Fd())
	}
	parent, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c",
		`i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do sh -c '` + script + `' & echo $!; i=$((i+1)); done; exec >&-`},
		&syscall.ProcAttr{Files: files})
	w.Close()
	if err != nil {
		return nil, err
	}
	pids := []int{parent}
	sc := bufio.NewScanner(r)
	for len(pids) <= n && sc.Scan() {
		p, err := strconv.Atoi(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("orphan pid %q: %w", sc.Text(), err)
		}
		pids = append(pids, p)
	}
	if len(pids) <= n {
		return nil, fmt.Errorf("the orphans' parent named %d of %d orphans: %v", len(pids)-1, n, sc.Err())
	}
	// Once their parent has exited, the kernel has handed them to the helper.
	if err := waitChild(parent); err != nil {
		return nil, fmt.Errorf("the orphans' parent: %w", err)
	}
	return pids, nil
}

// signal.Notify drops a signal when the channel is full, so the reaper's channel is
// buffered: a SIGCHLD that arrives while the reaper is in a pass, after its last
// wait4, must wake it once the pass ends. (That window is too narrow to hit from a
// test; this checks the buffer the guarantee rests on.)
func TestReaperKeepsAWakeup(t *testing.T) {
	r := newReaper()
	defer signal.Stop(r.chld)
	if cap(r.chld) < 1 {
		t.Fatalf("the reaper's SIGCHLD channel is unbuffered: a SIGCHLD during a pass is lost")
	}
}
