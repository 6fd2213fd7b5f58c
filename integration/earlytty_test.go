//go:build integration

package integration

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// TestEarlyStartInteractive: an interactive run (stdin and stdout the test's pty)
// starts bwrap early on a pty of its own and adopts it, and then behaves as the
// ordinary launch before it: the command is in the foreground of its own terminal
// (not the user's), its clipboard write (OSC 52) is filtered out, it starts with
// the user's window size, follows a resize, Ctrl-C
// ends it (130), and the user's terminal's modes are as they were once it has
// exited. The first launch records, the next two match; a fourth, whose plan
// changed (a new .env file to mask), misses, kills the early bwrap and its pty and
// runs as the ordinary launch does, the same in every respect above. Each of
// devsandbox's own lines before the command's output ends with a carriage return
// (the early start's "matched" was written once the relay had put the terminal in
// raw mode: a staircase).
func TestEarlyStartInteractive(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv("TERM=xterm")
	script := `
		read _ _ _ _ pgrp _ _ tpgid _ < /proc/self/stat
		[ "$pgrp" = "$tpgid" ] && echo "jobctl:ok" || echo "jobctl:bad $pgrp $tpgid"
		echo "size:$(stty size)"
		echo "tty:$(tty)"
		printf 'osc:[\033]52;c;cGxhbnRlZA==\007]\n'
		trap 'echo "resized:$(stty size)"' WINCH
		echo ready
		while :; do sleep 0.1; done`
	var first []string
	for i := range 4 {
		if i == 3 {
			p.write("proj/.env.early", "EARLY_TTY=1\n")
		}
		master, slave, err := tty.Open()
		if err != nil {
			t.Fatal(err)
		}
		outer := slave.Name()
		if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
			t.Fatal(err)
		}
		before, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		cmd := command(t.Context(), p.dir, baseEnv(env...), "--isolator=bwrap", "--debug", "--", "/bin/sh", "-c", script)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		raw := &rawOutput{}
		lr := newLineReader(t, io.TeeReader(master, raw))
		want := "devsandbox: debug: early start: matched"
		switch i {
		case 0:
			want = "devsandbox: debug: early start: not made: no record of this launch"
		case 3:
			want = "devsandbox: debug: early start: missed"
		}
		if got := lr.waitFor("devsandbox: debug: early start: " + strings.Fields(want)[4]); !strings.HasPrefix(got, want) {
			t.Errorf("launch %d: %q, want %q", i, got, want)
		}
		var seen []string
		for _, prefix := range []string{"jobctl:", "size:", "tty:", "osc:"} {
			seen = append(seen, lr.waitFor(prefix))
		}
		lr.waitFor("ready")
		if bare := raw.bareLines("devsandbox: "); len(bare) > 0 {
			t.Errorf("launch %d: devsandbox's lines without a carriage return (written in raw mode): %q", i, bare)
		}
		if seen[0] != "jobctl:ok" || seen[1] != "size:30 100" {
			t.Errorf("launch %d: %q, want jobctl:ok and size:30 100", i, seen)
		}
		if seen[3] != "osc:[]" {
			t.Errorf("launch %d: the clipboard write was not filtered on its way to the user's terminal: %q", i, seen[3])
		}
		if !strings.HasPrefix(seen[2], "tty:/dev/") || seen[2] == "tty:"+outer {
			t.Errorf("launch %d: the command's terminal is %q, not a pty of its own (the user's is %s)", i, seen[2], outer)
		}
		if err := tty.SetSize(master.Fd(), tty.Size{Rows: 40, Cols: 120}); err != nil {
			t.Fatal(err)
		}
		if got := lr.waitFor("resized:"); got != "resized:40 120" {
			t.Errorf("launch %d: after resize: %s", i, got)
		}
		if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("launch %d: Ctrl-C: exit %d, want 130", i, code)
		}
		after, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if *after != *before {
			t.Errorf("launch %d: the user's terminal's modes were not restored:\nbefore %+v\nafter  %+v", i, *before, *after)
		}
		master.Close()
		// The pty's number differs from launch to launch; the rest is the same.
		seen[2] = "tty:(own)"
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
}

// rawOutput keeps what a terminal's master gave, as it came.
type rawOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *rawOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

// bareLines returns the complete lines starting with prefix that end in a bare line
// feed: written while the terminal was in raw mode, they staircase.
func (o *rawOutput) bareLines(prefix string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var bare []string
	for rest := o.buf.String(); ; {
		line, after, ok := strings.Cut(rest, "\n")
		if !ok {
			return bare
		}
		rest = after
		if i := strings.Index(line, prefix); i >= 0 && !strings.HasSuffix(line, "\r") {
			bare = append(bare, line[i:])
		}
	}
}
