//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// TestEarlyStartPlainTerminals: a run that is not interactive whose stdout and
// stderr (a build run: `devsandbox -- make < /dev/null`), or stderr alone, are the
// user's terminal, the controlling terminal of devsandbox's session, starts bwrap
// early on what the ordinary launch gives the command there (a write-only pty of
// its own per terminal, filtered), never on the user's terminal, and behaves as the
// ordinary launch: the command's descriptor is its own write-only pty with the
// user's window size, a clipboard write (OSC 52) planted in its output is filtered
// out, PAGER=cat with a stdout terminal (unset with stderr alone), Ctrl-C ends it
// (130), and the user's terminal's modes are as they were. The first launch
// records, the next two match; a fourth, whose plan changed (a new .env file to
// mask), misses, kills the early bwrap and its ptys, and runs as the ordinary launch.
func TestEarlyStartPlainTerminals(t *testing.T) {
	requireBwrap(t)
	const script = `eval "exec 9>&$1"; echo "pager:[$PAGER]" >&9; echo "mode:$(stat -L -c %A /proc/self/fd/9)" >&9
		echo "size:$(stty size <&9)" >&9
		printf 'osc:[\033]52;c;cGxhbnRlZA==\007]\n' >&9
		echo ready >&9; while :; do sleep 0.1; done`
	for _, c := range []struct {
		shape, fd, pager string
	}{
		{"out", "1", "pager:[cat]"},
		{"err", "2", "pager:[]"},
	} {
		t.Run(c.shape, func(t *testing.T) {
			p := newProject(t)
			env, state := p.earlyEnv("TERM=xterm")
			var first []string
			for i := range 4 {
				if i == 3 {
					p.write("proj/.env.early", "EARLY_TTY=1\n")
				}
				r := earlyTerminalRun(t, p.dir, env, c.shape, false, "", "ready", "--isolator=bwrap", "--debug", "--", "/bin/sh", "-c", script, "sh", c.fd)
				all := string(r.screen) + string(r.out)
				want := []string{"not made: no record of this launch", "matched", "matched", "missed"}[i]
				if !strings.Contains(all, "devsandbox: debug: early start: "+want) {
					t.Errorf("launch %d: no %q in the output %q", i, want, all)
				}
				if strings.Contains(all, "52;c;") {
					t.Errorf("launch %d: the clipboard write reached the user's terminal: %q", i, all)
				}
				if r.code != 130 {
					t.Errorf("launch %d: Ctrl-C: exit %d, want 130; output %q", i, r.code, all)
				}
				if r.after != r.before {
					t.Errorf("launch %d: the user's terminal's modes changed: lflag %#o, want %#o", i, r.after.Lflag, r.before.Lflag)
				}
				seen := r.lines("pager:", "mode:", "size:", "osc:")
				if want := []string{c.pager, "mode:c-w-------", "size:30 100", "osc:[]"}; strings.Join(seen, "|") != strings.Join(want, "|") {
					t.Errorf("launch %d: %q, want %q", i, seen, want)
				}
				if i == 0 {
					first = seen
				} else if strings.Join(seen, "|") != strings.Join(first, "|") {
					t.Errorf("launch %d differs from the first: %q, want %q", i, seen, first)
				}
			}
			if n := len(records(t, state)); n != 1 {
				t.Errorf("%d launch records, want 1", n)
			}
			if left := leftovers(t, state); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestEarlyStartStdinTerminal: a run whose stdin alone is the user's terminal
// (`devsandbox -- cmd | less`), the controlling terminal of devsandbox's session,
// starts bwrap early on what the ordinary launch gives the command (the terminal
// opened read-only, its state restored after the run; /dev/null when devsandbox is
// a background job), never the terminal itself, and behaves as the ordinary launch:
// the command reads the typed line, writes no byte to the terminal (an OSC 52
// through fd 0 or a reopen of /proc/self/fd/0), and what it changes of the terminal
// does not outlive the run. Launches: recorded, matched, matched as a background job
// of a shell with job control (stdin /dev/null, the command not stopped), and
// missed (a new .env file to mask), each the same as the ordinary launch.
func TestEarlyStartStdinTerminal(t *testing.T) {
	requireBwrap(t)
	const script = `if [ "$(readlink /proc/self/fd/0)" = /dev/null ]; then echo "stdin:null"; else read -r line; echo "read[$line]"; fi
printf '\033]52;c;RkQwCg==\007' >&0 2>/dev/null && echo fd0-written
printf '\033]52;c;UFJPQwo=\007' >/proc/self/fd/0 2>/dev/null && echo proc-written
stty -echo -icanon rows 5 cols 7 2>/dev/null; echo done`
	p := newProject(t)
	env, state := p.earlyEnv("TERM=xterm")
	for i := range 4 {
		if i == 3 {
			p.write("proj/.env.early", "EARLY_TTY=1\n")
		}
		bg := i == 2
		r := earlyTerminalRun(t, p.dir, env, "in", bg, "typed-line\n", "", "--isolator=bwrap", "--debug", "--", "/bin/sh", "-c", script)
		want := []string{"not made: no record of this launch", "matched", "matched", "missed"}[i]
		if !bytes.Contains(r.out, []byte("devsandbox: debug: early start: "+want)) {
			t.Errorf("launch %d: no %q in the output %q", i, want, r.out)
		}
		read := "read[typed-line]"
		if bg {
			read = "stdin:null"
		}
		if r.code != 0 || !bytes.Contains(r.out, []byte(read+"\n")) || !bytes.Contains(r.out, []byte("done\n")) {
			t.Errorf("launch %d: exit %d, want 0 with %q and done; output %q", i, r.code, read, r.out)
		}
		// In the background, fd 0 is /dev/null: a write to it goes nowhere.
		if !bg && (bytes.Contains(r.out, []byte("fd0-written")) || bytes.Contains(r.out, []byte("proc-written"))) {
			t.Errorf("launch %d: the command wrote to its stdin, the user's terminal; output %q", i, r.out)
		}
		for _, bad := range []string{"52;c;", "RkQwCg", "UFJPQwo"} {
			if bytes.Contains(r.screen, []byte(bad)) {
				t.Errorf("launch %d: the user's terminal received %q from the sandbox: %q", i, bad, r.screen)
			}
		}
		if r.after != r.before || r.size != (tty.Size{Rows: 30, Cols: 100}) {
			t.Errorf("launch %d: the user's terminal was left changed: lflag %#o (want %#o), size %+v", i, r.after.Lflag, r.before.Lflag, r.size)
		}
	}
	if n := len(records(t, state)); n != 1 {
		t.Errorf("%d launch records, want 1", n)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

type earlyTerminalResult struct {
	out, screen   []byte // what reached the pipe (the streams that are not the terminal), the terminal
	code          int
	before, after unix.Termios
	size          tty.Size
}

// lines returns, for each prefix, the first line of the terminal's output that
// starts with it ("" when none), without its carriage return.
func (r earlyTerminalResult) lines(prefixes ...string) []string {
	var got []string
	for _, prefix := range prefixes {
		line := ""
		for _, l := range strings.Split(strings.ReplaceAll(string(r.screen), "\r", ""), "\n") {
			if strings.HasPrefix(l, prefix) {
				line = l
				break
			}
		}
		got = append(got, line)
	}
	return got
}

// earlyTerminalRun runs devsandbox with env and args on a new pty (30x100, typed
// written to it first), the controlling terminal of a session of its own, as the
// descriptors shape names (in: stdin; out: stdout and stderr; err: stderr), the
// others a pipe (stdout, stderr) or /dev/null (stdin). With bg, devsandbox is a
// background job of a shell with job control (set -m), the session's leader. Once
// the terminal shows interruptAt (when set), Ctrl-C is typed.
func earlyTerminalRun(t *testing.T, dir string, env []string, shape string, bg bool, typed, interruptAt string, args ...string) earlyTerminalResult {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if it.asOther { // the user's own terminal, which the user may reopen
		if err := unix.Fchown(int(slave.Fd()), it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	var r earlyTerminalResult
	before, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.before = *before
	if _, err := master.Write([]byte(typed)); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, dir, baseEnv(env...), args...)
	std := map[string][3]*os.File{"in": {slave, pw, pw}, "out": {null, slave, slave}, "err": {null, pw, slave}}[shape]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std[0], std[1], std[2]
	ctty := map[string]int{"in": 0, "out": 1, "err": 2}[shape]
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, ctty
	if bg {
		cmd.Args = append([]string{"bash", "--norc", "--noprofile", "-c", `set -m; "$@" & wait $!`, "bash"}, cmd.Args...)
		cmd.Path = "/bin/bash"
	}
	screenc := make(chan []byte, 1)
	outc := make(chan []byte, 1)
	seen := make(chan struct{})
	go func(at string) {
		var b []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf) // EIO once every slave is closed
			b = append(b, buf[:n]...)
			if at != "" && bytes.Contains(b, []byte(at)) {
				at = ""
				close(seen)
			}
			if err != nil {
				break
			}
		}
		screenc <- b
	}(interruptAt)
	go func() {
		b, _ := io.ReadAll(pr)
		outc <- b
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	pw.Close()
	if interruptAt != "" {
		select {
		case <-seen:
			if _, err := master.Write([]byte{0x03}); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
		}
	}
	_ = cmd.Wait()
	r.code = cmd.ProcessState.ExitCode()
	after, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r.after = *after
	if r.size, err = tty.GetSize(master.Fd()); err != nil {
		t.Fatal(err)
	}
	r.out = <-outc
	// Every slave is closed once devsandbox and the sandbox are gone: the master
	// reads EIO.
	r.screen = <-screenc
	return r
}

// A run whose stdin is the terminal, started early in the background of it (stdin
// /dev/null), then brought to the foreground before the early start is adopted
// (`fg`): the start made for the background is not the foreground's (which reads the
// terminal), so the adoption finds the mismatch, says so on the debug line, abandons
// the early bwrap and launches as today: the command reads the terminal, as a run
// started in the foreground does. The window is held open by the user's
// configuration file, a fifo the test writes only once the job is in the
// foreground: the early start comes before the configuration is read.
func TestEarlyStartMovedToForeground(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv("TERM=xterm", "XDG_CONFIG_HOME="+p.path("cfg"))
	p.write("cfg/devsandbox/config.toml", "")
	conf := p.path("cfg/devsandbox/config.toml")
	args := []string{"--isolator=bwrap", "--debug", "--", "/bin/sh", "-c",
		`if [ "$(readlink /proc/self/fd/0)" = /dev/null ]; then echo "stdin:null"; else read -r line; echo "read[$line]"; fi`}
	// The record of this command line, made in the foreground.
	if r := earlyTerminalRun(t, p.dir, env, "in", false, "first\n", "", args...); !bytes.Contains(r.out, []byte("early start: not made: no record of this launch")) || !bytes.Contains(r.out, []byte("read[first]")) {
		t.Fatalf("the first launch: exit %d, output %q", r.code, r.out)
	}
	fifos := map[string]string{"conf": conf, "go": p.path("go")}
	for _, f := range fifos {
		_ = os.Remove(f)
		if err := unix.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
		if it.asOther {
			if err := os.Chown(f, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if it.asOther {
		if err := unix.Fchown(int(slave.Fd()), it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := master.Write([]byte("typed-line\n")); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, master) }()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, p.dir, baseEnv(env...), args...)
	// A shell with job control starts devsandbox in the background, and brings it
	// to the foreground once the test says so.
	cmd.Args = append([]string{"bash", "--norc", "--noprofile", "-i", "-c", `"$@" & read -r go < ` + fifos["go"] + `; fg %1 >/dev/null`, "bash"}, cmd.Args...)
	cmd.Path = "/bin/bash"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, pw, pw
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	outc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		outc <- b
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	pw.Close()
	defer procs.KillSession(cmd.Process.Pid)
	// devsandbox started its early bwrap, and waits for its configuration.
	var dsb int
	for deadline := time.Now().Add(10 * time.Second); dsb == 0 || childNamed(dsb, "bwrap") == 0; time.Sleep(time.Millisecond) {
		dsb = childNamed(cmd.Process.Pid, "devsandbox")
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,wchan:20,args", "-s", strconv.Itoa(cmd.Process.Pid)).CombinedOutput()
			t.Fatalf("no early bwrap of devsandbox's in 10s; the session's processes:\n%s", ps)
		}
	}
	if err := writeFifo(fifos["go"], "go\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		pg, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPGRP)
		if err == nil && pg == dsb { // the job's leader is devsandbox
			break
		}
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,wchan:20,args", "-s", strconv.Itoa(cmd.Process.Pid)).CombinedOutput()
			procs.KillSession(cmd.Process.Pid)
			t.Fatalf("devsandbox (%d) is not the terminal's foreground in 10s (%d, %v); the session's processes:\n%s\noutput %q", dsb, pg, err, ps, <-outc)
		}
	}
	if err := writeFifo(conf, ""); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	out := <-outc
	for _, want := range []string{
		"devsandbox: debug: early start: missed: the early start differs from the fresh plan: devsandbox moved between the terminal's foreground and background since the early start",
		"read[typed-line]\n",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("no %q in the output %q", want, out)
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d, want 0; output %q", code, out)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// childNamed is a child of pid whose comm is name (0: none).
func childNamed(pid int, name string) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, _ := strconv.Atoi(f); comm(c) == name {
				return c
			}
		}
	}
	return 0
}

// writeFifo writes s to the fifo path, once a reader has it open.
func writeFifo(path, s string) error {
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = w.WriteString(s)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
