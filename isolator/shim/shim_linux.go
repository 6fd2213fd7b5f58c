// Package shim is the first program run inside a sandbox. It takes the terminal as its
// controlling terminal (so job control works under bwrap's --new-session), tells the
// host that the sandbox is set up, closes every inherited descriptor above stderr and
// execs the command, exiting 127 when it is not found and 126 when it cannot be run.
//
// The host learns the command's process id from the readiness report: it is sent with
// SCM_CREDENTIALS, which the kernel translates into the host's pid namespace.
package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Exit codes of a command that could not be started (POSIX shell conventions).
const (
	ExitSetupFailed   = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// Main runs the shim with its arguments (without argv[0]) and never returns when the
// command was started.
func Main(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == forwarderArg {
		return forwarderMain(args[1:], stderr)
	}
	if len(args) > 0 && args[0] == ContainerArg {
		return containerMain(args[1:], stderr)
	}
	if len(args) > 0 && strings.HasPrefix(args[0], connectPrefix) {
		return runConnect(args[0], args[1:], stderr)
	}
	if len(args) > 0 && strings.HasPrefix(args[0], FirewallArg) {
		return firewallMain(args[0], stderr)
	}
	takeTTY, readyFD := false, -1
	var forwards, publishes []string
	for len(args) > 0 && args[0] != "--" {
		switch a := args[0]; {
		case a == "--tty":
			takeTTY = true
		case strings.HasPrefix(a, "--forward="):
			forwards = append(forwards, strings.TrimPrefix(a, "--forward="))
		case strings.HasPrefix(a, "--publish="):
			publishes = append(publishes, strings.TrimPrefix(a, "--publish="))
		case strings.HasPrefix(a, "--ready-fd="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "--ready-fd="))
			if err != nil {
				fmt.Fprintf(stderr, "devsandbox-init: bad %s\n", a)
				return ExitNotExecutable
			}
			readyFD = n
		default:
			fmt.Fprintf(stderr, "devsandbox-init: unknown argument %q\n", a)
			return ExitNotExecutable
		}
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(stderr, "devsandbox-init: no command")
		return ExitNotFound
	}
	argv := args[1:]
	// Lead a session and process group of our own: bwrap's --new-session leaves the
	// command in the session of the sandbox's pid 1, where it can have no terminal,
	// and the host signals the command's process group.
	// Nothing the host opened may reach the command or the forwarders this shim starts
	// (whose /proc/<pid>/fd the command could open): close every inherited descriptor
	// but the readiness report, before anything else opens one.
	if err := closeInherited(readyFD); err != nil {
		fmt.Fprintf(stderr, "devsandbox-init: %v\n", err)
		return ExitSetupFailed
	}
	_, _ = unix.Setsid()
	if takeTTY {
		// A failure leaves the command without job control but otherwise working.
		if err := tty.TakeControl(0); err != nil {
			fmt.Fprintf(stderr, "devsandbox: warning: no job control: %v\n", err)
		}
	}
	for _, f := range publishes {
		if err := startPublisher(f); err != nil {
			msg := fmt.Sprintf("publishing port %s: %v", f, err)
			fmt.Fprintf(stderr, "devsandbox-init: %s\n", msg)
			if readyFD >= 0 {
				_ = Fail(readyFD, msg)
			}
			return ExitSetupFailed
		}
	}
	for _, f := range forwards {
		if err := startForwarder(f); err != nil {
			msg := fmt.Sprintf("starting the proxy forwarder %s: %v", f, err)
			fmt.Fprintf(stderr, "devsandbox-init: %s\n", msg)
			if readyFD >= 0 {
				_ = Fail(readyFD, msg)
			}
			return ExitSetupFailed
		}
	}
	if readyFD >= 0 {
		if err := Ready(readyFD); err != nil {
			fmt.Fprintf(stderr, "devsandbox-init: reporting readiness: %v\n", err)
			return ExitNotExecutable
		}
	}
	return Exec(argv, stderr)
}

// Fail reports on fd that the sandbox could not be completed, and why.
func Fail(fd int, reason string) error {
	defer unix.Close(fd)
	return unix.Sendmsg(fd, []byte("F"+reason), nil, nil, 0)
}

// Ready sends one readiness message with the caller's credentials on fd and closes it.
func Ready(fd int) error {
	defer unix.Close(fd)
	cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	return unix.Sendmsg(fd, []byte{'R'}, cred, nil, 0)
}

// Exec replaces the process with argv, or returns the exit code of a failed start.
func Exec(argv []string, stderr io.Writer) int {
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		code := ExitNotFound
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			code = ExitNotExecutable
		}
		fmt.Fprintf(stderr, "devsandbox: %s: %s\n", argv[0], reason(err, code))
		return code
	}
	err = syscall.Exec(path, argv, os.Environ())
	code := ExitNotExecutable
	if errors.Is(err, syscall.ENOENT) {
		code = ExitNotFound
	}
	fmt.Fprintf(stderr, "devsandbox: %s: %v\n", argv[0], err)
	return code
}

func reason(err error, code int) string {
	if code == ExitNotFound {
		return "command not found in the sandbox"
	}
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err.Error()
	}
	return err.Error()
}
