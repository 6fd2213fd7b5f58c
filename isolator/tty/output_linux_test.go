package tty

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutputKeepsTheTerminalOut: the command's descriptor is a terminal with the
// user's window size and no output processing; what it writes reaches the user's
// terminal filtered and processed once (ONLCR); its ioctls (modes, window size)
// change its own pty, not the user's terminal; the user's typed input is not its
// to read, nor anything to wait for (its descriptor is write-only, the pty's mode
// 0200); and Close returns once the last byte, written right before the slave
// closes, is copied.
func TestOutputKeepsTheTerminalOut(t *testing.T) {
	userMaster, user := openPair(t)
	if err := SetSize(user.Fd(), Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := userMaster.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	screen := make(chan screenResult, 1)
	go func() {
		out, err := readUntilEnd(userMaster, time.Now().Add(testTimeout))
		screen <- screenResult{string(out), err}
	}()
	slave, o, err := StartOutput(user, FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := GetSize(slave.Fd()); err != nil || s != (Size{Rows: 30, Cols: 100}) {
		t.Errorf("the pty's size is %+v (%v), want the user's 30x100", s, err)
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Oflag&unix.OPOST != 0 {
		t.Errorf("the pty processes output (oflag %#o): the user's terminal would process it twice", tio.Oflag)
	}
	tio.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	if err := SetSize(slave.Fd(), Size{Rows: 5, Cols: 7}); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(int(slave.Fd()), true); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Read(int(slave.Fd()), make([]byte, 64)); n > 0 || !errors.Is(err, unix.EBADF) {
		t.Errorf("a read of the pty returned %d bytes (%v), want EBADF at once: a pager reading its keys there would wait for ever", n, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode & 0o7777; perm != 0o200 {
		t.Errorf("the pty's mode is %#o, want 0200: a reopen of it for reading (/dev/console, /proc/self/fd/N) would wait for keys", perm)
	}
	if err := unix.SetNonblock(int(slave.Fd()), false); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 200000)
	if _, err := slave.Write([]byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07\x1b]0;title\x07a\n" + big + "END")); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	userTio, err := unix.IoctlGetTermios(int(user.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if userTio.Lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Errorf("the user's terminal modes changed: lflag %#o", userTio.Lflag)
	}
	if s, _ := GetSize(user.Fd()); s != (Size{Rows: 30, Cols: 100}) {
		t.Errorf("the user's terminal size changed to %+v", s)
	}
	user.Close()
	r := <-screen
	if want := "typed\r\n\x1b]0;title\x07a\r\n" + big + "END"; r.out != want {
		t.Errorf("the user's terminal got %q..., %d bytes, want %q..., %d bytes", r.out[:min(len(r.out), 40)], len(r.out), want[:40], len(want))
	}
}

// TestOpenOutputStartsLater: an Output opened before the filter's options are known
// (an early start) copies nothing until Start; then what the command wrote before
// reaches the user's terminal through the filter Start was given, and the pty takes
// the window size the user's terminal has at Start, not at the open.
func TestOpenOutputStartsLater(t *testing.T) {
	userMaster, user := openPair(t)
	if err := SetSize(user.Fd(), Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	screen := make(chan screenResult, 1)
	go func() {
		out, err := readUntilEnd(userMaster, time.Now().Add(testTimeout))
		screen <- screenResult{string(out), err}
	}()
	slave, o, err := OpenOutput(user)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slave.Write([]byte("\x1b]52;c;ZWNobyBwd25lZAo=\x07before\n")); err != nil {
		t.Fatal(err)
	}
	if err := SetSize(user.Fd(), Size{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if err := o.Start(FilterOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, err := GetSize(slave.Fd()); err != nil || s != (Size{Rows: 40, Cols: 120}) {
		t.Errorf("the pty's size is %+v (%v), want the user's 40x120 at Start", s, err)
	}
	if _, err := slave.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	user.Close()
	if r := <-screen; r.out != "before\r\nafter" {
		t.Errorf("the user's terminal got %q, want %q (the OSC 52 filtered)", r.out, "before\r\nafter")
	}
}

// TestOpenOutputClosedUnstarted: an Output closed without Start (an early start
// abandoned) closes its master, so the slave's holders get an error, and writes
// nothing to the user's terminal.
func TestOpenOutputClosedUnstarted(t *testing.T) {
	userMaster, user := openPair(t)
	slave, o, err := OpenOutput(user)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	if _, err := slave.Write([]byte("dropped")); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := slave.Write([]byte("x")); err == nil {
		t.Error("a write to the slave of a closed Output succeeded")
	}
	user.Close()
	if out, _ := readUntilEnd(userMaster, time.Now().Add(testTimeout)); len(out) != 0 {
		t.Errorf("the user's terminal got %q from an Output never started", out)
	}
}

// BenchmarkOutput is what a run whose output is a terminal adds: the pty, its
// setup and the copy's start and end, with nothing written.
func BenchmarkOutput(b *testing.B) {
	master, user, err := Open()
	if err != nil {
		b.Fatal(err)
	}
	defer master.Close()
	defer user.Close()
	for b.Loop() {
		slave, o, err := StartOutput(user, FilterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		slave.Close()
		if err := o.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
