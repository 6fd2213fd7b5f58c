package bwrap

import (
	"strings"
	"syscall"
	"testing"
)

// TestUnaskedEnd: bwrap ended by a signal devsandbox did not send is said, naming
// bwrap, its pid and the signal, and whose the exit status is.
func TestUnaskedEnd(t *testing.T) {
	for _, tc := range []struct {
		started bool
		sig     syscall.Signal
		want    string
	}{
		{true, syscall.SIGKILL, "bubblewrap (pid 42) was killed by SIGKILL, which devsandbox did not send; the sandbox ended with it: the exit status 137 is bubblewrap's, not the command's"},
		{false, syscall.SIGSEGV, "bubblewrap (pid 42) was killed by SIGSEGV, which devsandbox did not send, before the command started (exit status 139)"},
	} {
		if got := unaskedEnd(42, tc.sig, tc.started); got != tc.want {
			t.Errorf("unaskedEnd(%v, %v):\n got %q\nwant %q", tc.sig, tc.started, got, tc.want)
		}
	}
	if got := unaskedEnd(42, syscall.Signal(200), true); !strings.Contains(got, "signal 200") {
		t.Errorf("an unnamed signal: %q", got)
	}
}

// TestForwardSaysWhetherBwrap: a signal forwarded before the command is known goes
// to bwrap, and forward says so (bwrap's end by it is then devsandbox's doing);
// once the command is known, it goes to the command's group.
func TestForwardSaysWhetherBwrap(t *testing.T) {
	var out strings.Builder
	stdio, err := newChildStdio(nil, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := startChild("/bin/sh", []string{"sh", "-c", "sleep 600"}, nil, stdio, nil, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		t.Fatal(err)
	}
	if !forward(syscall.SIGTERM, 0, c.pid) {
		t.Error("forward to bwrap (no command yet) says it did not signal bwrap")
	}
	ws, err := c.wait()
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the child: %v, %v; want killed by SIGTERM", ws, err)
	}
	if forward(0, 1<<22-1, c.pid) {
		t.Error("forward with the command known says it signalled bwrap")
	}
}
