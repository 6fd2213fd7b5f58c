package tty

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testTimeout bounds every wait in these tests, so a bug fails instead of
// hanging.
const testTimeout = 10 * time.Second

// relayRig is a relay between an outer pty, whose master the test uses as the
// user's keyboard and screen, and an inner pty standing for the sandbox.
type relayRig struct {
	outerMaster, outerSlave *os.File
	innerMaster, innerSlave *os.File
	relay                   *Relay
	screen                  chan screenResult
}

type screenResult struct {
	out string
	err error
}

// startRelay starts a relay from the outer terminal, or from in when it is
// not nil, to the inner pty, with the outer terminal as the screen.
func startRelay(t *testing.T, outerSize Size, in *os.File) *relayRig {
	t.Helper()
	g := &relayRig{screen: make(chan screenResult, 1)}
	g.outerMaster, g.outerSlave = openPair(t)
	g.innerMaster, g.innerSlave = openPair(t)
	if err := SetSize(g.outerSlave.Fd(), outerSize); err != nil {
		t.Fatal(err)
	}
	if in == nil {
		in = g.outerSlave
	}
	r, err := StartRelay(in, g.outerSlave, g.innerMaster, FilterOptions{})
	if err != nil {
		t.Fatalf("StartRelay: %v", err)
	}
	g.relay = r
	// fdOf, not Fd, which would make a pollable pipe blocking under the relay.
	if fd, _ := fdOf(in); IsTerminal(fd) && !r.ownsInput {
		t.Errorf("relay reads the caller's terminal directly; want a private, interruptible reopening")
	}
	// The screen must be read while the relay runs, or a full outer pty would
	// block the relay's output copy.
	go func() {
		out, err := readUntilEnd(g.outerMaster, time.Now().Add(testTimeout))
		g.screen <- screenResult{string(out), err}
	}()
	return g
}

// startChild runs script with the inner slave as its controlling terminal and
// stdio, the way the sandbox init sets it up, then closes the test's copy of
// the slave so the relay sees the end when the child is gone.
func (g *relayRig) startChild(t *testing.T, script string, extra ...*os.File) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = g.innerSlave, g.innerSlave, g.innerSlave
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting child: %v", err)
	}
	g.innerSlave.Close()
	return cmd
}

// finish closes the relay, checks that the outer terminal is back in canonical
// mode, and returns everything the user's screen received.
func (g *relayRig) finish(t *testing.T) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.relay.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Close did not return")
	}
	tio, err := unix.IoctlGetTermios(int(g.outerSlave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
		t.Errorf("outer terminal not restored: lflag = %#x", tio.Lflag)
	}
	// Close has returned, so all output is in the outer pty; closing the last
	// outer slave lets the screen reader drain it and stop.
	g.outerSlave.Close()
	res := <-g.screen
	if res.err != nil {
		t.Fatalf("reading screen: %v (got %q)", res.err, res.out)
	}
	return res.out
}

func TestRelayInteractive(t *testing.T) {
	g := startRelay(t, Size{Rows: 24, Cols: 80}, nil)
	cmd := g.startChild(t, `read line; echo "got:$line"`)
	// The outer terminal is raw, so \r passes through; the inner one maps it
	// to \n and echoes it as \r\n.
	if _, err := g.outerMaster.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if got, want := g.finish(t), "hello\r\ngot:hello\r\n"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}

func TestRelayInterrupt(t *testing.T) {
	g := startRelay(t, Size{Rows: 24, Cols: 80}, nil)
	ready, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ready.Close()
	cmd := g.startChild(t, `trap 'echo interrupted; exit 3' INT; echo >&3; exec 3>&-; while :; do sleep 1; done`, readyW)
	readyW.Close()
	if _, err := ready.Read(make([]byte, 1)); err != nil {
		t.Fatalf("waiting for the child's trap: %v", err)
	}
	// Ctrl-C is a plain byte on the raw outer terminal; the inner line
	// discipline turns it into SIGINT for the child's process group.
	if _, err := g.outerMaster.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("child exit = %v, want code 3", err)
	}
	if got, want := g.finish(t), "^Cinterrupted\r\n"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}

func TestRelayResize(t *testing.T) {
	initial := Size{Rows: 24, Cols: 80}
	g := startRelay(t, initial, nil)
	if got, err := GetSize(g.innerSlave.Fd()); err != nil || got != initial {
		t.Fatalf("inner size after StartRelay = %+v, %v; want %+v", got, err, initial)
	}

	resized := Size{Rows: 50, Cols: 132}
	if err := SetSize(g.outerSlave.Fd(), resized); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	// The relay handles the signal asynchronously: wait for the condition,
	// bounded by a deadline.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testTimeout)
	for {
		got, err := GetSize(g.innerSlave.Fd())
		if err != nil {
			t.Fatal(err)
		}
		if got == resized {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("inner size = %+v, want %+v", got, resized)
		}
	}

	g.innerSlave.Close()
	if got := g.finish(t); got != "" {
		t.Errorf("screen = %q, want nothing", got)
	}
	if err := g.relay.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRelayDeliversAllOutput(t *testing.T) {
	const lines = 100000
	g := startRelay(t, Size{Rows: 24, Cols: 80}, nil)
	cmd := g.startChild(t, fmt.Sprintf("seq %d", lines))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "%d\r\n", i)
	}
	got := g.finish(t)
	if got != want.String() {
		t.Errorf("screen has %d bytes, want %d; last bytes %q", len(got), want.Len(), got[max(0, len(got)-40):])
	}
}

// TestRelayInputNotTerminal covers piped input: no terminal set-up, but the
// bytes are still copied to the command.
func TestRelayInputNotTerminal(t *testing.T) {
	in, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer inW.Close()
	g := startRelay(t, Size{Rows: 24, Cols: 80}, in)
	cmd := g.startChild(t, `read line; echo "[$line]"`)
	if _, err := inW.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	// in is not a terminal, so the relay leaves the outer terminal cooked,
	// and its output processing turns each \r\n from the inner one into \r\r\n.
	if got, want := g.finish(t), "hi\r\r\n[hi]\r\r\n"; got != want {
		t.Errorf("screen = %q, want %q", got, want)
	}
}
