//go:build integration

package integration

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// TestStdinTerminal: stdin alone the user's terminal (`devsandbox -- cmd > out.log`,
// `devsandbox -- cmd | less`): the command reads its input from it, but writes no
// byte to it (an OSC 52 clipboard write through fd 0, or through a reopen of
// /proc/self/fd/0), and what it changes of the terminal's modes and window size
// does not outlive the run, however the run ends: the command exits, is killed, or
// devsandbox is told to stop (SIGTERM). The terminal is the test's pty, the
// controlling terminal of devsandbox's session as a shell's is, owned by the user
// who runs devsandbox; stdout and stderr are a pipe. docker and krun copy stdin into
// the container through a pipe.
func TestStdinTerminal(t *testing.T) {
	const attack = `trap 'echo done; exit 3' TERM; read -r line; echo "read[$line]"
printf '\033]52;c;RkQwCg==\007' >&0 2>/dev/null && echo fd0-written
printf '\033]52;c;UFJPQwo=\007' >/proc/self/fd/0 2>/dev/null && echo proc-written
stty -echo -icanon rows 5 cols 7 2>/dev/null; echo ready; `
	cases := []struct {
		name, end string
		code      int
		sigterm   bool
	}{
		{"exits", "echo done", 0, false},
		{"killed", "echo done; kill -KILL $$", 137, false},
		{"stopped", "while :; do sleep 0.05; done", 3, true},
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := stdinTerminalRun(t, p.dir, c.sigterm, true, "--isolator="+iso, "--", "/bin/sh", "-c", attack+c.end)
				if r.code != c.code || !bytes.Contains(r.log, []byte("read[typed-line]")) || !bytes.Contains(r.log, []byte("done")) {
					t.Fatalf("exit %d, want %d with the typed line read; output %q", r.code, c.code, r.log)
				}
				for _, bad := range []string{"52;c;", "RkQwCg", "UFJPQwo"} {
					if bytes.Contains(r.echoed, []byte(bad)) {
						t.Errorf("the host terminal received %q from the sandbox; it received %q; output %q", bad, r.echoed, r.log)
					}
				}
				if r.after != r.before {
					t.Errorf("the host terminal's modes changed: lflag %#o, want %#o; output %q", r.after.Lflag, r.before.Lflag, r.log)
				}
				if r.size != (tty.Size{Rows: 30, Cols: 100}) {
					t.Errorf("the host terminal's window size is %+v after the run, want 30x100; output %q", r.size, r.log)
				}
			})
		}
		if iso != "bwrap" {
			return
		}
		// Another session's terminal (devsandbox's session has another or none): not
		// reachable as /dev/tty, so reopened read-only through /proc/self/fd, which the
		// command can reopen for writing; devsandbox says so. Writes to fd 0 fail, the
		// modes are restored.
		t.Run("not_the_controlling_terminal", func(t *testing.T) {
			r := stdinTerminalRun(t, p.dir, false, false, "--isolator="+iso, "--", "/bin/sh", "-c", attack+"echo done")
			if r.code != 0 || !bytes.Contains(r.log, []byte("not this session's controlling terminal")) {
				t.Fatalf("exit %d, want 0 with a warning; output %q", r.code, r.log)
			}
			if bytes.Contains(r.echoed, []byte("RkQwCg")) || bytes.Contains(r.log, []byte("fd0-written")) {
				t.Errorf("a write to fd 0 reached the host terminal; it received %q; output %q", r.echoed, r.log)
			}
			if r.after != r.before {
				t.Errorf("the host terminal's modes changed: lflag %#o, want %#o; output %q", r.after.Lflag, r.before.Lflag, r.log)
			}
		})
	})
}

type stdinTerminalResult struct {
	log, echoed   []byte // the command's output; what reached the host terminal
	code          int
	before, after unix.Termios
	size          tty.Size
}

// stdinTerminalRun runs devsandbox with args, stdin the test's pty (30x100, with
// "typed-line\n" typed; with ctty, the controlling terminal of devsandbox's session),
// stdout and stderr one pipe; with sigterm, devsandbox gets SIGTERM once the command
// has written "ready".
func stdinTerminalRun(t *testing.T, dir string, sigterm, ctty bool, args ...string) stdinTerminalResult {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if it.asOther { // the user's own terminal, which the user may reopen
		if err := unix.Fchown(int(slave.Fd()), it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	var r stdinTerminalResult
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.before = *before
	if _, err := master.Write([]byte("typed-line\n")); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := command(t.Context(), dir, baseEnv("TERM=xterm"), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, pw, pw
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, ctty, 0
	echoed := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the test's slave is closed
		echoed <- b
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	logc := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		signalled := !sigterm
		for {
			n, err := pr.Read(buf)
			b = append(b, buf[:n]...)
			if !signalled && bytes.Contains(b, []byte("ready\n")) {
				signalled = true
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
			if err != nil {
				logc <- b
				return
			}
		}
	}()
	_ = cmd.Wait()
	r.code = cmd.ProcessState.ExitCode()
	r.log = <-logc
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.after = *after
	if r.size, err = tty.GetSize(slave.Fd()); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	select {
	case r.echoed = <-echoed:
	case <-time.After(30 * time.Second):
		t.Fatal("the host side of the terminal did not end within 30s")
	}
	return r
}
