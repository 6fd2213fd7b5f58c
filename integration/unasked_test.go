//go:build integration

package integration

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
)

// TestBwrapKilledIsSaid: bwrap killed by a signal devsandbox did not send (here
// SIGKILL from outside, as a parent-death signal of an ended thread sent it in
// flake137) ends the run with bwrap's 128+9, and devsandbox says which process was
// killed, by which signal, and that the status is not the command's: never a
// silent 137.
func TestBwrapKilledIsSaid(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=bwrap", "--", "/bin/sh", "-c", `echo ready; exec sleep 600`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	lr := startLines(t, cmd)
	lr.waitFor("ready")
	bwrap := bwrapOf(t, cmd.Process.Pid)
	if err := syscall.Kill(bwrap, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	want := fmt.Sprintf("devsandbox: warning: bubblewrap (pid %d) was killed by SIGKILL, which devsandbox did not send; the sandbox ended with it: the exit status 137 is bubblewrap's, not the command's", bwrap)
	if code != 137 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr:\n%s\nwant 137 and %q", code, stderr.String(), want)
	}
}

// TestBwrapOutlivesTheProxysStop: the end of a run stops the session proxy as soon
// as the init has exited, beside bwrap's own exit; bwrap, held stopped here
// (SIGSTOP) from before the command's end until the proxy has exited, must still
// exit by itself, with the command's status. flake137: the proxy's start goroutine
// returned locked to its thread, the runtime ended the thread, and when it was the
// thread that had started bwrap (Pdeathsig SIGKILL) bwrap was killed: exit 137,
// after the command's work, with nothing said. The thread is the runtime's choice,
// so the run is repeated.
func TestBwrapOutlivesTheProxysStop(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	for i := range 8 {
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=bwrap", "--", "/bin/sh", "-c",
			`curl -s -o /dev/null -m 5 http://example.invalid/; echo done; read _; exit 0`)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		lr := startLines(t, cmd)
		lr.waitFor("done") // the proxy ran: curl's connection started it
		bwrap, proxy := bwrapOf(t, cmd.Process.Pid), 0
		for _, pid := range descendants(cmd.Process.Pid) {
			if strings.HasPrefix(comm(pid), "devsandbox-prox") {
				proxy = pid
			}
		}
		if proxy == 0 {
			t.Fatalf("no devsandbox-proxy below devsandbox (%d): %v", cmd.Process.Pid, descendants(cmd.Process.Pid))
		}
		bwrapFD, err := unix.PidfdOpen(bwrap, 0)
		if err != nil {
			t.Fatal(err)
		}
		proxyFD, err := unix.PidfdOpen(proxy, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.PidfdSendSignal(bwrapFD, unix.SIGSTOP, nil, 0); err != nil {
			t.Fatal(err)
		}
		stdin.Close() // the command exits, the init with it; bwrap is stopped
		if err := pidfdExited(proxyFD, time.Now().Add(30*time.Second)); err != nil {
			t.Fatalf("run %d: devsandbox-proxy did not stop after the command's end: %v", i, err)
		}
		// The proxy's goroutine returns as devsandbox reaps it: a thread it ended
		// sends bwrap its SIGKILL then. What has not come in a second did not come.
		killed := pidfdExited(bwrapFD, time.Now().Add(time.Second)) == nil
		_ = unix.PidfdSendSignal(bwrapFD, unix.SIGCONT, nil, 0)
		unix.Close(bwrapFD)
		unix.Close(proxyFD)
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); killed || code != 0 {
			t.Fatalf("run %d: bwrap, stopped, was killed (%v) as the proxy stopped: exit %d, stderr:\n%s", i, killed, code, stderr.String())
		}
	}
}

// bwrapOf returns the pid of the bwrap devsandbox (pid) started.
func bwrapOf(t *testing.T, pid int) int {
	t.Helper()
	for _, d := range descendants(pid) {
		if comm(d) == "bwrap" && procs.ParentPid(d) == pid {
			return d
		}
	}
	t.Fatalf("no bwrap below devsandbox (%d): %v", pid, descendants(pid))
	return 0
}
