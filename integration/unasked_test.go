//go:build integration

package integration

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

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
	bwrap := 0
	for _, pid := range descendants(cmd.Process.Pid) {
		if comm(pid) == "bwrap" && procs.ParentPid(pid) == cmd.Process.Pid {
			bwrap = pid
		}
	}
	if bwrap == 0 {
		t.Fatalf("no bwrap below devsandbox (%d): %v", cmd.Process.Pid, descendants(cmd.Process.Pid))
	}
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
