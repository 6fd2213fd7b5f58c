package sandboxinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// The bwrap init runs the command only once the manifest's checks pass (the checks
// run beside the signal subscription, and the command must still wait for them),
// and the command does not inherit the manifest.
func TestMainRunsCommandOnlyAfterChecks(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name     string
		manifest string
		want     int
		ran      bool
	}{
		{"passing", wire.EncodeChecks(nil, ""), 4, true},
		{"failing", wire.EncodeChecks([]wire.Check{{Kind: wire.CheckRW, Path: missing}}, ""), ExitSetupFailed, false},
		{"unreadable", "checks/1\nnot a check\n", ExitSetupFailed, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=main", wire.ManifestEnv+"="+c.manifest,
				// Exit 9 if the manifest reached the command.
				`HELPER_SCRIPT=test -z "$`+wire.ManifestEnv+`" || exit 9; : > `+marker+`; exit 4`)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.want {
				t.Errorf("exit status %d, want %d (output %q)", code, c.want, out)
			}
			if _, err := os.Stat(marker); (err == nil) != c.ran {
				t.Errorf("the command ran: %v, want %v (output %q)", err == nil, c.ran, out)
			}
		})
	}
}

// With wire.AwaitGoArg the init starts the command only after the host's go-ahead
// on the readiness socket: the host's last check (the disk reserve's first reading)
// runs beside bwrap's setup and must be in force before the command's first
// instruction. The host's end closed without the byte, or another byte, ends the
// init with ExitSetupFailed and the command never runs; an init that did not wait
// would have run it (the marker) before the host's answer. With the byte, the
// command runs and the readiness report follows.
func TestMainAwaitsTheHostsGoAhead(t *testing.T) {
	for _, c := range []struct {
		name string
		send []byte // nil: close the host's end without a byte
		want int
		ran  bool
	}{
		{"go-ahead", []byte{wire.GoByte}, 4, true},
		{"host gone", nil, ExitSetupFailed, false},
		{"another byte", []byte{'x'}, ExitSetupFailed, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			host, child := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
			defer host.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=main-await", `HELPER_SCRIPT=: > `+marker+`; exit 4`)
			cmd.ExtraFiles = []*os.File{child}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			child.Close()
			if c.send != nil {
				if _, err := host.Write(c.send); err != nil {
					t.Fatal(err)
				}
			} else {
				host.Close()
			}
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.want {
				t.Errorf("exit status %d, want %d", code, c.want)
			}
			if _, err := os.Stat(marker); (err == nil) != c.ran {
				t.Errorf("the command ran: %v, want %v", err == nil, c.ran)
			}
			if c.ran {
				buf := make([]byte, 64)
				if n, err := host.Read(buf); err != nil || n == 0 {
					t.Errorf("no readiness report after the go-ahead: %d bytes, %v", n, err)
				}
			}
		})
	}
}
