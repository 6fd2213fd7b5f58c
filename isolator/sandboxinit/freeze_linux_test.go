package sandboxinit

import (
	"bytes"
	"os/exec"
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
		if out.String() != wire.StopMarker(token, true) {
			t.Fatalf("round %d: the init answered %q, want %q", round, out.String(), wire.StopMarker(token, true))
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
