//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// Guarantee 12 when the output reaches the user's terminal but stdin is not one
// (`devsandbox -- cmd <file`, an agent's one-shot mode fed by a pipe): docker and
// krun copy the container's stdout and stderr themselves, and each must be
// filtered as the relayed terminal is; bwrap gives each such stream a pty of its
// own and copies it through the same filter.
func TestPlainTerminalFiltered(t *testing.T) {
	// ZWNobyBwd25lZAo= is "echo pwned\n"; \235 and \234 are the 8-bit OSC and ST.
	const attack = `\033]52;c;ZWNobyBwd25lZAo=\007\033[21t\23552;c;ZWNobyBwd25lZAo=\234\033]0;kept-title\007\033[1mkept-bold\033[m`
	const script = `printf '` + attack + `out\n'; printf '` + attack + `err\n' >&2; echo done`
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		out := terminalOutput(t, p.dir, false, "--isolator="+iso, "--", "/bin/sh", "-c", script)
		for _, bad := range []string{"52;c;", "\x1b[21t"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("the host terminal received %q; output %q", bad, out)
			}
		}
		for _, want := range []string{"\x1b]0;kept-title\x07\x1b[1mkept-bold\x1b[mout", "\x1b]0;kept-title\x07\x1b[1mkept-bold\x1b[merr", "done"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("the host terminal did not receive %q; output %q", want, out)
			}
		}

		optIn := "--config=" + p.writeConfig(iso, "clipboard.toml", "[sandbox]\nterminal_clipboard = true\n")
		out = terminalOutput(t, p.dir, false, "--isolator="+iso, optIn, "--", "/bin/sh", "-c", script)
		if n := bytes.Count(out, []byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07")); n != 2 {
			t.Errorf("with terminal_clipboard, the host terminal received the clipboard write %d times, want 2 (stdout, stderr); output %q", n, out)
		}
		if bytes.Contains(out, []byte("\x1b[21t")) {
			t.Errorf("with terminal_clipboard, the host terminal received CSI 21 t; output %q", out)
		}
	})
}

// TestPlainPipeUnchanged: output to a pipe or a file is the command's bytes, escape
// sequences and all (binary output, `cat image.png > file`), on every isolator.
func TestPlainPipeUnchanged(t *testing.T) {
	blob := []byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07\x1b[21t\x9d52;c;x\x9c\x1bP$q m\x1b\\\x00\x01\xff\xfe\xc2\x9b21t\x1b")
	for i := range 256 {
		blob = append(blob, byte(i))
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/blob.bin", string(blob))
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", "cat blob.bin; cat blob.bin >&2")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		if r.stdout != string(blob) {
			t.Errorf("stdout to a pipe changed: got %q, want %q", r.stdout, blob)
		}
		if !bytes.Contains([]byte(r.stderr), blob) {
			t.Errorf("stderr to a pipe does not hold the blob unchanged: got %q", r.stderr)
		}
	})
}

// TestPlainTerminalIoctls: in a run that is not interactive, the user's terminal
// (stdout and stderr; stdin is a pipe) is no descriptor of the sandbox's. With one,
// the command could change the terminal beyond its output: turn echo and canonical
// input off for the shell that reads it next (tcsetattr), set its window size
// (TIOCSWINSZ, which signals the host shell), and read what the user types meanwhile
// (the terminal's input is the host shell's). TIOCSTI and TIOCLINUX are refused by
// the syscall policy (TestBypassTerminalInjection).
func TestPlainTerminalIoctls(t *testing.T) {
	const script = `dd iflag=nonblock bs=64 count=1 <&2 2>/dev/null | od -An -c | tr -d ' \n' | sed 's/^/stolen[/; s/$/]/'; echo
stty -echo -icanon rows 5 cols 7 <&1 2>/dev/null; stty -echo -icanon rows 5 cols 7 <&2 2>/dev/null; echo done`
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := plainTerminal(t, p.dir, "secret\n", "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if r.code != 0 || !bytes.Contains(r.out, []byte("done")) {
			t.Fatalf("exit %d; output %q", r.code, r.out)
		}
		if bytes.Contains(r.out, []byte("stolen[secret")) {
			t.Errorf("the command read what the user typed at the host terminal; output %q", r.out)
		}
		if r.lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
			t.Errorf("the host terminal's echo or canonical mode was turned off (lflag %#o); output %q", r.lflag, r.out)
		}
		if r.size != (tty.Size{Rows: 30, Cols: 100}) {
			t.Errorf("the host terminal's window size is %+v, want 30x100; output %q", r.size, r.out)
		}
	})
}

// TestPlainTerminalKeepsBehaviour: a command whose output reaches the user's
// terminal (stdin a pipe) keeps its exit status, and the last bytes it writes on
// stdout and stderr before it exits all arrive. Under bwrap it sees a terminal on
// stdout and stderr, of the user's window size, and none on stdin, so it keeps its
// colours without turning interactive (docker and krun give it pipes there).
//
// Each stream must arrive whole and in its own order, checked on the terminal's bytes
// with the other's left out: their bytes are disjoint (stdout "X", 'x' and "OUT",
// stderr "Z", 'z' and "ERR"). The first byte of each keeps an 'x' or 'z' the run
// writes elsewhere (devsandbox's own messages say "sandbox") from standing in for a
// lost one. And since stdout and stderr are one terminal, the order between them is
// the command's: docker and krun give the command one stream for both (the engine,
// which copies a container's stdout and stderr pipes apart, put 64 KiB to all of the
// stderr before the last 37-97 KiB of stdout in 5 runs of 50 of this script with
// `docker run` alone; docs/isolators.md, the order of stdout and stderr).
func TestPlainTerminalKeepsBehaviour(t *testing.T) {
	const script = `test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; test -t 2 && echo stderr-tty >&2
stty size <&1; mkdir -p d; ls --color=auto -d d
printf X; head -c 300000 /dev/zero | tr '\0' x; echo OUT; printf Z >&2; head -c 300000 /dev/zero | tr '\0' z >&2; echo ERR >&2; exit 7`
	streams := []struct{ name, bytes, want string }{
		{"stdout", "XxOUT", "X" + strings.Repeat("x", 300000) + "OUT"},
		{"stderr", "ZzER", "Z" + strings.Repeat("z", 300000) + "ERR"},
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := plainTerminal(t, p.dir, "", "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if r.code != 7 {
			t.Errorf("exit %d, want 7; output %s", r.code, runs(r.out))
		}
		for _, s := range streams {
			if !bytes.Contains(only(r.out, s.bytes), []byte(s.want)) {
				t.Errorf("the host terminal did not receive the command's %s whole and in order (%q, 300000 %q, %q); output %s", s.name, s.want[:1], s.want[1], s.want[300001:], runs(r.out))
			}
		}
		if !bytes.Contains(r.out, []byte(streams[0].want+"\r\n"+streams[1].want+"\r\n")) {
			t.Errorf("the host terminal did not receive stdout, then stderr, in the order the command wrote them; output %s", runs(r.out))
		}
		if iso == "bwrap" {
			// docker and krun relay the container's output from pipes there.
			for _, want := range []string{"stdout-tty", "stderr-tty", "30 100", "\x1b[01;34md\x1b[0m"} {
				if !bytes.Contains(r.out, []byte(want)) {
					t.Errorf("the host terminal did not receive %q; output %s", want, runs(r.out))
				}
			}
		}
		if bytes.Contains(r.out, []byte("stdin-tty")) {
			t.Errorf("stdin is a terminal in the sandbox; output %s", runs(r.out))
		}
	})
}

// only is b with the bytes not in set left out.
func only(b []byte, set string) []byte {
	var kept []byte
	for _, c := range b {
		if strings.IndexByte(set, c) >= 0 {
			kept = append(kept, c)
		}
	}
	return kept
}

// runs is b for a message, each run of more than 8 equal bytes as its count: all of
// a large output, which tail would cut.
func runs(b []byte) string {
	var s strings.Builder
	text := 0 // where the bytes not yet written begin
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] == b[i] {
			j++
		}
		if j-i > 8 {
			if text < i {
				fmt.Fprintf(&s, "%q", b[text:i])
			}
			fmt.Fprintf(&s, "[%q x%d]", b[i], j-i)
			text = j
		}
		i = j
	}
	if text < len(b) {
		fmt.Fprintf(&s, "%q", b[text:])
	}
	return s.String()
}

// TestPlainTerminalSignal: Ctrl-C's SIGINT to devsandbox reaches the command whose
// output goes through the pty, and its output after the signal still arrives.
func TestPlainTerminalSignal(t *testing.T) {
	const script = `trap 'echo got-int; exit 5' INT; echo ready; while :; do sleep 0.05; done`
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := plainTerminalSignal(t, p.dir, "", "ready", "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if r.code != 5 || !bytes.Contains(r.out, []byte("got-int")) {
			t.Errorf("exit %d, want 5 with got-int; output %q", r.code, r.out)
		}
	})
}

// tail is the end of b, for a message.
func tail(b []byte) []byte {
	if len(b) > 400 {
		return b[len(b)-400:]
	}
	return b
}

type plainResult struct {
	out   []byte
	code  int
	lflag uint32   // the host terminal's local modes after the run
	size  tty.Size // its window size after the run
	// deadline: devsandbox did not exit by itself within plainTerminalWithin's
	// limit and was killed
	deadline bool
}

// plainTerminal runs devsandbox with args with stdout and stderr a pty of the
// test's, 30x100 (the user's terminal), its controlling terminal, and stdin a pipe
// fed nothing; typed is in the terminal's input beforehand, as keys the user typed.
func plainTerminal(t *testing.T, dir, typed string, args ...string) plainResult {
	t.Helper()
	return plainTerminalSignal(t, dir, typed, "", args...)
}

// plainTerminalSignal is plainTerminal that sends devsandbox SIGINT once the
// terminal has received signalAt (none when empty).
func plainTerminalSignal(t *testing.T, dir, typed, signalAt string, args ...string) plainResult {
	t.Helper()
	return plainTerminalWithin(t, 0, dir, typed, signalAt, args...)
}

// plainTerminalWithin is plainTerminalSignal that gives devsandbox at most d (none
// when 0) to exit on its own: then it is killed, and the result says so
// (deadline), for a test that asserts a run ends by itself.
func plainTerminalWithin(t *testing.T, d time.Duration, dir, typed, signalAt string, args ...string) plainResult {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if typed != "" {
		if _, err := master.Write([]byte(typed)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cmd := command(ctx, dir, baseEnv("TERM=xterm"), args...)
	cmd.Stdin = strings.NewReader("")
	cmd.Stdout, cmd.Stderr = slave, slave
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 1
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, 64*1024)
		signalled := signalAt == ""
		for {
			n, err := master.Read(buf)
			b = append(b, buf[:n]...)
			if !signalled && bytes.Contains(b, []byte(signalAt)) {
				signalled = true
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			if err != nil { // EIO once the test's slave is closed after devsandbox exits
				got <- b
				return
			}
		}
	}()
	_ = cmd.Wait()
	var r plainResult
	r.code = cmd.ProcessState.ExitCode()
	r.deadline = ctx.Err() != nil
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.lflag = tio.Lflag
	if r.size, err = tty.GetSize(slave.Fd()); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	select {
	case r.out = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the host side of the terminal did not end within 30s")
	}
	return r
}
