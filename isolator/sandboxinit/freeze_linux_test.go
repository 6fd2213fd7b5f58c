package sandboxinit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// busy starts sh running script, and returns it; it is killed at the end of the test.
func busy(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	c := exec.Command("/bin/sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range descendantsOf(c.Process.Pid) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

// The freezer stops every member, including one in a session of its own (which a
// stop of the command's process group missed), answers with the host's token only
// once each thread of each is stopped, and continues only those it stopped: a
// process the command's own job control had stopped stays stopped.
func TestFreezerStopsEveryMember(t *testing.T) {
	loop := busy(t, `setsid /bin/sh -c 'while :; do :; done' & while :; do :; done`)
	held := busy(t, `while :; do :; done`)
	_ = syscall.Kill(held.Process.Pid, syscall.SIGSTOP)
	deadline := time.Now().Add(30 * time.Second)
	for len(descendantsOf(loop.Process.Pid)) == 0 && time.Now().Before(deadline) { // the setsid child starts
	}
	for jobstop.GroupState(strconv.Itoa(held.Process.Pid)) != 'T' && time.Now().Before(deadline) {
	}
	members := append([]int{loop.Process.Pid, held.Process.Pid}, descendantsOf(loop.Process.Pid)...)
	var out bytes.Buffer
	f := &freezer{members: func() []int { return members }, out: &out}
	const token = "00112233445566778899aabbccddeeff"
	for round := range 50 {
		out.Reset()
		f.stop([]byte(token))
		if want := wire.StopAnswer(token, wire.StopStopped); out.String() != want {
			t.Fatalf("round %d: the init answered %q, want %q", round, out.String(), want)
		}
		for _, p := range members {
			if st := jobstop.GroupState(strconv.Itoa(p)); st != 'T' {
				t.Fatalf("round %d: the init answered stopped with process %d in state %q", round, p, st)
			}
		}
		f.cont()
		if st := jobstop.GroupState(strconv.Itoa(held.Process.Pid)); st != 'T' {
			t.Fatalf("round %d: a process stopped before the freeze was continued (state %q)", round, st)
		}
	}
	for _, p := range members[2:] {
		for jobstop.State(strconv.Itoa(p)) == 'T' && time.Now().Before(deadline) {
		}
		if st := jobstop.State(strconv.Itoa(p)); st == 'T' {
			t.Errorf("process %d still stopped after cont", p)
		}
	}
}

// A stop that comes once the command has exited (here reaped, as the init's reaper
// may have done already, or a zombie not reaped yet) while an orphan it left runs
// on: the init stops the orphan, finds the command ended (exitWatch), continues the
// orphan at once and answers that the command had ended (wire.StopEnded), so that
// the host does not stop devsandbox for a command that is over. Before the command
// exits the same stop answers stopped. Real processes.
func TestFreezerAnswersEnded(t *testing.T) {
	const token = "00112233445566778899aabbccddeeff"
	for _, reaped := range []bool{false, true} {
		t.Run(fmt.Sprintf("reaped=%v", reaped), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// The command starts an orphan (in a session of its own, as a daemon
			// would) and exits once its stdin ends.
			cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'while :; do :; done' & echo $!; read -r a`)
			cmd.Stdin = r
			outp, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(outp).ReadString('\n')
			orphan, aerr := strconv.Atoi(strings.TrimSpace(line))
			if err != nil || aerr != nil {
				t.Fatalf("the command said %q (%v)", line, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
			var out bytes.Buffer
			f := &freezer{members: func() []int { return []int{cmd.Process.Pid, orphan} }, ended: exitWatch(cmd.Process.Pid), out: &out}
			f.stop([]byte(token))
			if want := wire.StopAnswer(token, wire.StopStopped); out.String() != want {
				t.Fatalf("with the command running the init answered %q, want %q", out.String(), want)
			}
			f.cont()
			w.Close() // the command exits
			if reaped {
				_ = cmd.Wait()
			} else {
				deadline := time.Now().Add(10 * time.Second)
				for jobstop.State(strconv.Itoa(cmd.Process.Pid)) != 'Z' && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // a zombie sends no event to wait for
				}
			}
			out.Reset()
			f.stop([]byte(token))
			if want := wire.StopAnswer(token, wire.StopEnded); out.String() != want {
				t.Fatalf("with the command exited the init answered %q, want %q", out.String(), want)
			}
			if st := jobstop.State(strconv.Itoa(orphan)); st == 'T' {
				t.Errorf("the orphan is left stopped (%q) although the host will not stop", st)
			}
			if len(f.stopped) != 0 {
				t.Errorf("the freezer still holds %v as stopped", f.stopped)
			}
			if !reaped {
				_ = cmd.Wait()
			}
		})
	}
}

// A token that is not the host's form gets no answer: the init never writes what a
// frame carried unchecked.
func TestFreezerIgnoresBadToken(t *testing.T) {
	var out bytes.Buffer
	f := &freezer{members: func() []int { return nil }, out: &out}
	for _, tok := range []string{"", "short", "\x1b\\injected-0000", strings.Repeat("a", 65), "ABCDEF0123456789"} {
		f.stop([]byte(tok))
	}
	if out.Len() != 0 {
		t.Errorf("the init answered %q to bad tokens", out.String())
	}
}

// statFlags reads the flags of /proc/PID/stat, by which namespaceMembers leaves out
// the kernel's threads (PF_KTHREAD).
func TestStatFlags(t *testing.T) {
	for _, tc := range []struct {
		line string
		want uint64
	}{
		{"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0", 2129984},
		{"7 (a) b) c) R 1 7 7 0 -1 4194560 12 0", 4194560},
		{"garbage", 0},
	} {
		if got := statFlags([]byte(tc.line)); got != tc.want {
			t.Errorf("statFlags(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
	if 2129984&pfKthread == 0 || 4194560&pfKthread != 0 {
		t.Error("PF_KTHREAD read wrong")
	}
}

// j4Token is the token of TestFreezerAnswersRunning's stop.
const j4Token = "0123456789abcdef0123456789abcdef"

// nsHolder is a helper role: the first process of a new user, pid and mount
// namespace, with a /proc of that pid namespace; it says ready and waits for its
// stdin to end. No process of its namespace can stop it: the kernel drops a signal
// its own namespace sends to a namespace's first process that has no handler for it,
// SIGSTOP included.
func nsHolder() int {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Println("making the mounts private:", err)
		return 1
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		fmt.Println("mounting /proc:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// freezerRun is a helper role: the run role's freezer in the namespace nsHolder
// made, which it joined from outside (as an engine's exec joins a container: its
// parent is not of the namespace, so the first process is not its ancestor). It
// answers one stop on stdout. It refuses to stop anything unless /proc is the
// namespace's and the members are the holder alone.
func freezerRun() int {
	self, err := os.Readlink("/proc/self")
	if err != nil || self != strconv.Itoa(os.Getpid()) {
		fmt.Printf("/proc is not this pid namespace's (/proc/self is %q, %v; the pid is %d)\n", self, err, os.Getpid())
		return 1
	}
	if m := namespaceMembers(); !slices.Equal(m, []int{1}) {
		fmt.Printf("the members are %v, want the namespace's first process alone [1]\n", m)
		return 1
	}
	newFreezer("run", os.Stdout, func() bool { return false }).stop([]byte(j4Token))
	return 0
}

// A process of the session that SIGSTOP does not stop (here the first process of
// the pid namespace, seen from an init that joined it) is waited for the whole
// bound, jobstop.StopBound, and the init then answers that one kept running
// (wire.StopRunning): the host ends the session rather than show the
// command stopped. Real processes and namespaces, the init's own member list.
func TestFreezerAnswersRunning(t *testing.T) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nsenter (util-linux) is needed to join a pid namespace")
		}
		t.Skip("no nsenter here")
	}
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), helperEnv+"=nsholder")
	holder.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("starting a process in a user, pid and mount namespace of its own: %v", err)
		}
		t.Skipf("no user and pid namespace here: %v", err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		stdin.Close()
		_ = holder.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the namespace's first process said %q (%v)", line, err)
	}
	pid := strconv.Itoa(holder.Process.Pid)
	join := exec.Command(nsenter, "--target", pid, "--user", "--preserve-credentials", "--pid", "--mount", "--", os.Args[0], "-test.run=^$")
	join.Env = append(os.Environ(), helperEnv+"=freezer-run")
	var stderr bytes.Buffer
	join.Stderr = &stderr
	start := time.Now()
	got, err := join.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the init in the namespace: %v: %q %q", err, got, stderr.String())
	}
	if want := wire.StopAnswer(j4Token, wire.StopRunning); string(got) != want {
		t.Fatalf("the init answered %q, want %q: the namespace's first process cannot be stopped from inside (state %q)", got, want, jobstop.State(pid))
	}
	if took < jobstop.StopBound {
		t.Errorf("the init answered after %s, want the whole bound %s first", took, jobstop.StopBound)
	}
	if st := jobstop.State(pid); st == 'T' {
		t.Errorf("the namespace's first process is stopped (%q): the test stopped what it says cannot be", st)
	}
}
