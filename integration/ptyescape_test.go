//go:build integration

package integration

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Guarantee 12 through the relayed terminal: what the command writes reaches the
// user's terminal emulator, which outlives it. A write to the clipboard (OSC 52,
// in 7-bit and 8-bit C1 form) would be pasted into a host shell later, and a
// title report (CSI 21 t) types sandbox-chosen text into the terminal's input,
// which is the host shell's once the command ends. Neither may reach the host
// side of the relay; titles, colours and the text around them must. With
// sandbox.terminal_clipboard the write passes, the clipboard query never does.
func TestPtyEscapeFiltered(t *testing.T) {
	// ZWNobyBwd25lZAo= is "echo pwned\n"; \235 and \234 are the 8-bit OSC and ST.
	const script = `printf '\033]52;c;ZWNobyBwd25lZAo=\007\033[21t\23552;c;ZWNobyBwd25lZAo=\234\033]52;c;?\007\033]0;kept-title\007\033[1mkept-bold\033[m\n'; echo done`
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		out := relayedOutput(t, p.dir, "--isolator="+iso, "--", "/bin/sh", "-c", script)
		for _, bad := range []string{"52;c;", "\x1b[21t"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("the host terminal received %q; output %q", bad, out)
			}
		}
		for _, want := range []string{"\x1b]0;kept-title\x07", "\x1b[1mkept-bold\x1b[m", "done"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("the host terminal did not receive %q; output %q", want, out)
			}
		}

		optIn := "--config=" + p.writeConfig(iso, "clipboard.toml", "[sandbox]\nterminal_clipboard = true\n")
		out = relayedOutput(t, p.dir, "--isolator="+iso, optIn, "--", "/bin/sh", "-c", script)
		for _, want := range []string{"\x1b]52;c;ZWNobyBwd25lZAo=\x07", "\x9d52;c;ZWNobyBwd25lZAo=\x9c", "done"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("with terminal_clipboard, the host terminal did not receive %q; output %q", want, out)
			}
		}
		for _, bad := range []string{"52;c;?", "\x1b[21t"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("with terminal_clipboard, the host terminal received %q; output %q", bad, out)
			}
		}
	})
}

// relayedOutput runs devsandbox with args on a pty of its own, as on a user's
// terminal, and returns every byte it wrote there.
func relayedOutput(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	return terminalOutput(t, dir, true, args...)
}

// terminalOutput is relayedOutput with stdin the pty too (interactive) or
// /dev/null (stdout and stderr a terminal, stdin not: `devsandbox -- cmd <file`).
func terminalOutput(t *testing.T, dir string, stdinTTY bool, args ...string) []byte {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := command(t.Context(), dir, baseEnv("TERM=xterm"), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	if !stdinTTY {
		cmd.Stdin = nil          // /dev/null
		cmd.SysProcAttr.Ctty = 1 // the controlling terminal is the child's stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once devsandbox exits
		got <- b
	}()
	_ = cmd.Wait()
	var out []byte
	select {
	case out = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the host side of the terminal did not end within 30s")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d; output %q", code, out)
	}
	return out
}
