package bwrap

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// runChild starts sh -c script with stdout and stderr writing to out (a writer that is
// not a file, so its copy goroutine runs) and returns its status.
func runChild(t *testing.T, script string, out *bytes.Buffer, extra ...*os.File) (syscall.WaitStatus, error) {
	t.Helper()
	stdio, err := newChildStdio(nil, out, out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := startChild("/bin/sh", []string{"sh", "-c", script}, nil, stdio, extra, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.pidfd == nil {
		t.Error("no pidfd: the wait blocks a thread in wait4")
	}
	return c.wait()
}

func TestChildExitStatus(t *testing.T) {
	var out bytes.Buffer
	ws, err := runChild(t, "echo out; echo err >&2; exit 7", &out)
	if err != nil {
		t.Fatal(err)
	}
	if got := exitCode(ws, nil); got != 7 {
		t.Errorf("exit code %d, want 7", got)
	}
	if out.String() != "out\nerr\n" {
		t.Errorf("output %q, want both lines in order", out.String())
	}
}

func TestChildKilledBySignal(t *testing.T) {
	var out bytes.Buffer
	ws, err := runChild(t, "kill -TERM $$", &out)
	if err != nil {
		t.Fatal(err)
	}
	if got := exitCode(ws, nil); got != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d", got, 128+int(syscall.SIGTERM))
	}
}

// An extra descriptor arrives at 3, a nil one is closed, and stdin is /dev/null.
func TestChildDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	ws, err := runChild(t, `echo via3 >&3; { echo x >&4; } 2>/dev/null && echo open4; read -r l || echo eof`, &out, w, nil)
	w.Close()
	if err != nil || exitCode(ws, nil) != 0 {
		t.Fatalf("status %v, %v; output %q", ws, err, out.String())
	}
	buf := make([]byte, 16)
	n, _ := r.Read(buf)
	if string(buf[:n]) != "via3\n" || out.String() != "eof\n" {
		t.Errorf("fd 3 got %q, output %q; want \"via3\\n\" and \"eof\\n\"", buf[:n], out.String())
	}
}

func TestStartChildMissingBinary(t *testing.T) {
	stdio, err := newChildStdio(nil, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startChild("/nonexistent/bwrap", []string{"bwrap"}, nil, stdio, nil, &syscall.SysProcAttr{}); err == nil {
		t.Fatal("started a binary that does not exist")
	}
}
