//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// handOverTerminal connects to the Unix socket argv[1] and passes it the command's
// descriptors 0, 1 and 2 (SCM_RIGHTS) with one byte, then exits: the descriptors
// stay open in the socket's queue until the listener reads them, outside the
// sandbox and after its last process is gone.
const handOverTerminal = `import array, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
print("handed-over", flush=True)`

// TestTerminalHeldOutsideTheSandbox: the command hands the pty devsandbox gave it
// (its slave: the output's own pty of a run whose stdin is not a terminal, the
// relayed pty of an interactive one) to a process outside the sandbox, here a
// listener in the project that has not accepted yet (any service of the user's
// whose socket the sandbox can reach: a stopped one, a busy one). The pty is then
// never closed by the sandbox's end: devsandbox must still return with the
// command's status, its output copied, and the user's terminal as it was. docker
// and krun give the command pipes or a pty of the init's own, never the engine's:
// their runs end as well, and leave no container on the engine.
func TestTerminalHeldOutsideTheSandbox(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is required in CI: %v", err)
		}
		t.Skip("python3 not installed")
	}
	for _, interactive := range []bool{false, true} {
		name := "output"
		if interactive {
			name = "interactive"
		}
		t.Run(name, func(t *testing.T) {
			forEachIsolator(t, func(t *testing.T, iso string) {
				p := newProject(t)
				sock := filepath.Join(p.dir, "h.sock")
				ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close() // never accepted while the run goes on
				if err := os.Chmod(sock, 0o666); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p.dir, "hand.py"), []byte(handOverTerminal), 0o644); err != nil {
					t.Fatal(err)
				}

				master, slave, err := tty.Open()
				if err != nil {
					t.Fatal(err)
				}
				defer master.Close()
				if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
					t.Fatal(err)
				}
				before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				cmd := command(ctx, p.dir, baseEnv("TERM=xterm"), "--isolator="+iso, "--",
					"/bin/sh", "-c", python+` hand.py h.sock; echo after; exit 3`)
				cmd.WaitDelay = time.Second
				cmd.Stdout, cmd.Stderr = slave, slave
				cmd.Stdin = bytes.NewReader(nil)
				if interactive {
					cmd.Stdin = slave
				}
				cmd.SysProcAttr.Setsid = true
				cmd.SysProcAttr.Setctty = true
				cmd.SysProcAttr.Ctty = 1
				got := make(chan []byte, 1)
				go func() {
					var b []byte
					buf := make([]byte, 64*1024)
					for {
						n, err := master.Read(buf)
						b = append(b, buf[:n]...)
						if err != nil {
							got <- b
							return
						}
					}
				}()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				werr := cmd.Wait()
				after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				slave.Close()
				var out []byte
				select {
				case out = <-got:
				case <-time.After(10 * time.Second):
					// What holds the terminal's slave is outside devsandbox: the
					// test's own pty stayed open after devsandbox returned.
					master.Close()
					out = <-got
					t.Errorf("the terminal's pty stayed open 10s after devsandbox returned (a descriptor of it is held outside the sandbox); output %q", out)
				}
				if ctx.Err() != nil || errors.Is(werr, context.DeadlineExceeded) {
					t.Fatalf("devsandbox did not return within 20s of a command that handed its terminal out of the sandbox and exited; output %q", out)
				}
				if code := cmd.ProcessState.ExitCode(); code != 3 {
					t.Errorf("exit %d, want the command's 3; output %q", code, out)
				}
				for _, want := range []string{"handed-over", "after"} {
					if !bytes.Contains(out, []byte(want)) {
						t.Errorf("the terminal did not receive %q; output %q", want, out)
					}
				}
				if isDocker(iso) {
					// The listener still holds the descriptors: the engine must have
					// ended the run's containers all the same (dockerd 26 kept the
					// container running, unanswerable to an inspect, while the engine's
					// own output pipe was held, then left its shim behind).
					id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
					if left := dockerAt(t, iso, "ps", "-a", "-q", "--filter", "label=dev.devsandbox.project="+id); left != "" {
						t.Errorf("the run's containers were still on the engine after devsandbox returned: %s", strings.Fields(left))
					}
				}
				if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
					t.Errorf("the terminal's modes were not restored: lflag %#o iflag %#o oflag %#o, were %#o %#o %#o",
						after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag)
				}
			})
		})
	}
}
