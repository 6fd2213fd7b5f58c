package tty

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestStateRestore: what a command changes of a terminal (modes, window size,
// exclusive mode, stopped output, file mode) is put back by Restore, and a terminal
// left alone is not written to.
func TestStateRestore(t *testing.T) {
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	fd := int(slave.Fd())
	if err := SetSize(slave.Fd(), Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	var st0 unix.Stat_t
	if err := unix.Fstat(fd, &st0); err != nil {
		t.Fatal(err)
	}
	s, err := SaveState(slave.Fd())
	if err != nil {
		t.Fatal(err)
	}

	changed := *before
	changed.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &changed); err != nil {
		t.Fatal(err)
	}
	if err := SetSize(slave.Fd(), Size{Rows: 5, Cols: 7}); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(fd, unix.TIOCEXCL, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOOFF); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fchmod(fd, 0o666); err != nil {
		t.Fatal(err)
	}

	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("modes not restored: lflag %#o, want %#o", after.Lflag, before.Lflag)
	}
	if sz, err := GetSize(slave.Fd()); err != nil || sz != (Size{Rows: 30, Cols: 100}) {
		t.Errorf("window size %+v (%v), want 30x100", sz, err)
	}
	if exclusive(fd) {
		t.Error("the terminal is still in exclusive mode")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != st0.Mode {
		t.Errorf("file mode %#o, want %#o", st.Mode, st0.Mode)
	}
	// Output flows again: what is written to the slave reaches the master.
	if _, err := slave.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := master.Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Errorf("read %q (%v) from the master after Restore, want \"x\": output still stopped", buf[:n], err)
	}
}
