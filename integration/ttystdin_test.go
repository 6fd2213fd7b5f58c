//go:build integration

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// TestStdinTerminal: stdin alone the user's terminal (`devsandbox -- cmd > out.log`,
// `devsandbox -- cmd | less`): the command reads its input from it, but writes no
// byte to it (an OSC 52 clipboard write through fd 0, or through a reopen of
// /proc/self/fd/0), and what it changes of the terminal's modes and window size
// does not outlive the run. The terminal is the test's pty, the controlling
// terminal of devsandbox's session as a shell's is; stdout and stderr are a file.
// docker and krun copy stdin into the container through a pipe.
func TestStdinTerminal(t *testing.T) {
	const script = `read -r line; echo "read[$line]"
printf '\033]52;c;RkQwCg==\007' >&0 2>/dev/null && echo fd0-written
printf '\033]52;c;UFJPQwo=\007' >/proc/self/fd/0 2>/dev/null && echo proc-written
stty -echo -icanon rows 5 cols 7 2>/dev/null; echo done`
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
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
		before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := master.Write([]byte("typed-line\n")); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(t.TempDir(), "out.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd := command(t.Context(), p.dir, baseEnv("TERM=xterm"), "--isolator="+iso, "--", "/bin/sh", "-c", script)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, out, out
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
		got := make(chan []byte, 1)
		go func() {
			var b []byte
			buf := make([]byte, 4096)
			for {
				n, err := master.Read(buf)
				b = append(b, buf[:n]...)
				if err != nil {
					got <- b
					return
				}
			}
		}()
		_ = cmd.Run()
		log, _ := os.ReadFile(out.Name())
		if cmd.ProcessState.ExitCode() != 0 || !bytes.Contains(log, []byte("read[typed-line]")) || !bytes.Contains(log, []byte("done")) {
			t.Fatalf("exit %d, want 0 with the typed line read; output %q", cmd.ProcessState.ExitCode(), log)
		}
		after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		size, err := tty.GetSize(slave.Fd())
		if err != nil {
			t.Fatal(err)
		}
		_ = master.SetReadDeadline(time.Now().Add(2 * time.Second))
		slave.Close()
		echoed := <-got
		for _, bad := range []string{"52;c;", "RkQwCg", "UFJPQwo"} {
			if bytes.Contains(echoed, []byte(bad)) {
				t.Errorf("the host terminal received %q from the sandbox; it received %q; output %q", bad, echoed, log)
			}
		}
		if *after != *before {
			t.Errorf("the host terminal's modes changed: lflag %#o, want %#o; output %q", after.Lflag, before.Lflag, log)
		}
		if size != (tty.Size{Rows: 30, Cols: 100}) {
			t.Errorf("the host terminal's window size is %+v after the run, want 30x100; output %q", size, log)
		}
	})
}
