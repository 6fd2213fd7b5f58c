package bwrap_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// tiocsti pushes a command into its terminal's input (TIOCSTI) and says whether the
// kernel let it.
const tiocsti = `import errno, fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"X")
    print("TIOCSTI ok")
except OSError as e:
    print("TIOCSTI", errno.errorcode[e.errno])
`

// TestWrapArgvNoTerminalInjection: a wrapped command runs in a session of its own
// (bwrap --new-session), so it has no controlling terminal and cannot push input into
// the terminal it was started from (TIOCSTI), even where the syscall filter, which
// refuses TIOCSTI too, is off: a harness's WrapArgv with Syscalls.Unfiltered, as
// here. The harness's command is a session leader with the terminal as its own.
func TestWrapArgvNoTerminalInjection(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to make the ioctl")
	}
	if b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("the kernel refuses TIOCSTI to everyone (dev.tty.legacy_tiocsti = 0): nothing to show")
	}
	p, proj := libraryPlan(t)
	p.Self = ""
	p.Syscalls.Unfiltered = true
	p.Limits.Pids = 0
	watchPlan(t, p)
	argv, err := bwrap.WrapArgv(p, []string{"/usr/bin/python3", "-c", tiocsti})
	if err != nil {
		t.Fatal(err)
	}
	if err := bwrap.PrepareHost(p); err != nil {
		t.Fatal(err)
	}
	env, err := bwrap.Env(p)
	if err != nil {
		t.Fatal(err)
	}
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	// Non-canonical input: a pushed byte is readable without a newline after it.
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, proj
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrapped run: %v\n%s%s", err, out.String(), errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "TIOCSTI EPERM" {
		t.Errorf("TIOCSTI in the wrapped command: %q, want EPERM (stderr %q)", got, errb.String())
	}
	if err := unix.SetNonblock(int(slave.Fd()), true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := unix.Read(int(slave.Fd()), buf); n > 0 {
		t.Errorf("the harness's terminal received input from the sandbox: %q", buf[:n])
	}
}
