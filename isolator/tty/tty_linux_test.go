package tty

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv selects a helper role when the test binary re-executes itself.
const helperEnv = "DEVSANDBOX_TTY_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "take-control":
		os.Exit(takeControlHelper())
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// openPair opens a pty pair that is closed when the test ends.
func openPair(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, slave, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		master.Close()
		slave.Close()
	})
	return master, slave
}

// readUntilEnd reads f until EIO (every slave descriptor closed) or the
// deadline, and returns what it read.
func readUntilEnd(f *os.File, deadline time.Time) ([]byte, error) {
	if err := f.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	var got bytes.Buffer
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, syscall.EIO) {
			return got.Bytes(), nil
		}
		if err != nil {
			return got.Bytes(), err
		}
	}
}

func TestOpen(t *testing.T) {
	master, slave := openPair(t)
	if !IsTerminal(slave.Fd()) {
		t.Errorf("IsTerminal(slave) = false, want true")
	}
	if _, err := slave.Write([]byte("ping\n")); err != nil {
		t.Fatalf("writing to slave: %v", err)
	}
	slave.Close()
	got, err := readUntilEnd(master, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatalf("reading master: %v", err)
	}
	// The slave's default output processing turns \n into \r\n.
	if want := "ping\r\n"; string(got) != want {
		t.Errorf("master read %q, want %q", got, want)
	}
}

func TestIsTerminalPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(r.Fd()) {
		t.Errorf("IsTerminal(pipe) = true, want false")
	}
	if err := TakeControl(r.Fd()); !errors.Is(err, ErrNotTerminal) {
		t.Errorf("TakeControl(pipe) = %v, want ErrNotTerminal", err)
	}
}

func TestSizeRoundTrip(t *testing.T) {
	_, slave := openPair(t)
	want := Size{Rows: 33, Cols: 101}
	if err := SetSize(slave.Fd(), want); err != nil {
		t.Fatalf("SetSize: %v", err)
	}
	got, err := GetSize(slave.Fd())
	if err != nil {
		t.Fatalf("GetSize: %v", err)
	}
	if got != want {
		t.Errorf("GetSize = %+v, want %+v", got, want)
	}
}

func TestMakeRaw(t *testing.T) {
	_, slave := openPair(t)
	fd := int(slave.Fd())
	lflag := func() uint32 {
		t.Helper()
		tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			t.Fatalf("TCGETS: %v", err)
		}
		return tio.Lflag & (unix.ICANON | unix.ECHO)
	}
	cooked := uint32(unix.ICANON | unix.ECHO)
	if got := lflag(); got != cooked {
		t.Fatalf("new pty lflag ICANON|ECHO = %#x, want %#x", got, cooked)
	}
	restore, err := MakeRaw(slave.Fd())
	if err != nil {
		t.Fatalf("MakeRaw: %v", err)
	}
	if got := lflag(); got != 0 {
		t.Errorf("raw lflag ICANON|ECHO = %#x, want 0", got)
	}
	for i := range 2 {
		if err := restore(); err != nil {
			t.Fatalf("restore call %d: %v", i+1, err)
		}
		if got := lflag(); got != cooked {
			t.Errorf("after restore call %d, lflag ICANON|ECHO = %#x, want %#x", i+1, got, cooked)
		}
	}
}

// TestTakeControl re-executes the test binary in a new session with a pty
// slave as stdin; the helper takes control of it and reports its process
// group and the terminal's foreground process group.
func TestTakeControl(t *testing.T) {
	_, slave := openPair(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), exe)
	// GORACE: a race-enabled binary otherwise sleeps a second at exit.
	cmd.Env = append(os.Environ(), helperEnv+"=take-control", "GORACE=atexit_sleep_ms=0")
	cmd.Stdin = slave
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v; stderr:\n%s", err, stderr.String())
	}
	// A session leader is its own process group leader.
	pid := cmd.Process.Pid
	if want := fmt.Sprintf("pgrp=%d tpgid=%d\n", pid, pid); stdout.String() != want {
		t.Errorf("helper printed %q, want %q; stderr:\n%s", stdout.String(), want, stderr.String())
	}
}

func takeControlHelper() int {
	if err := TakeControl(0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Fields after the parenthesised command name start at field 3 (state),
	// so pgrp (field 5) is at index 2 and tpgid (field 8) at index 5.
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:]))
	pgrp, err1 := strconv.Atoi(fields[2])
	tpgid, err2 := strconv.Atoi(fields[5])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if pgrp <= 0 || tpgid <= 0 {
		fmt.Fprintf(os.Stderr, "pgrp=%d tpgid=%d: want both > 0\n", pgrp, tpgid)
		return 1
	}
	fmt.Printf("pgrp=%d tpgid=%d\n", pgrp, tpgid)
	return 0
}
