// Package sandboxinit is the init: the first program run inside a sandbox, its pid 1.
// Under bwrap (Main; devsandbox-bwrap-init, or devsandbox-init) it closes every
// inherited descriptor above stderr, tells the host that the sandbox is set up, and
// starts the command in a session of its own with the terminal as its controlling
// terminal (so job control works under bwrap's --new-session), exiting 127 when it is
// not found and 126 when it cannot be run; in a container (ContainerMain;
// devsandbox-init only) it is the init that verifies the protections first. Before
// bwrap starts it can also be the step that moves the sandbox into its session cgroups
// (cgroup.JoinArg).
//
// The host learns the init's process id from the readiness report: it is sent with
// SCM_CREDENTIALS, which the kernel translates into the host's pid namespace; the
// init passes the signals it receives on to the command.
package sandboxinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
	"github.com/devsandbox/devsandbox/isolator/landlock"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Exit codes of a command that could not be started (POSIX shell conventions).
const (
	ExitSetupFailed   = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// Run runs the init with its arguments (without argv[0]) in every role but the
// firewall (package firewall): the container roles after ContainerArg, else Main's.
func Run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == ContainerArg {
		return ContainerMain(args[1:], stderr)
	}
	return Main(args, stderr)
}

// Main runs the init's bwrap roles with its arguments (without argv[0]); the
// container roles are ContainerMain's, which a program that links only Main (the
// bwrap init) leaves out.
//
// Under bwrap (no role argument) the init is the sandbox's pid 1 (bwrap --as-pid-1,
// so that no process in the sandbox runs outside the syscall filter, which bwrap
// loads before it starts the init): it reports readiness, starts the command in a
// session of its own (with the terminal as its controlling terminal when --tty),
// passes on the signals the host sends it, reaps orphans, and exits with the
// command's status (128+N when a signal N killed it). --nproc=N sets RLIMIT_NPROC
// first: inside the sandbox's own user namespace it counts the sandbox's tasks only.
// With wire.UnsetGOMAXPROCSArg the runtime started with the one P of the GOMAXPROCS=1
// devsandbox added; the init removes the variable and takes the default number of Ps.
// With wire.AwaitGoArg it starts the command only once the host's go-ahead came on
// the readiness socket.
func Main(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == forwarderArg {
		return forwarderMain(args[1:], stderr)
	}
	if len(args) > 0 && strings.HasPrefix(args[0], connectPrefix) {
		return runConnect(args[0], args[1:], stderr)
	}
	if len(args) > 0 && args[0] == cgroup.JoinArg {
		return joinMain(args[1:], stderr)
	}
	takeTTY, readyFD, nproc, oneProc, scope, awaitGo := false, -1, 0, false, false, false
	var forwards, publishes, listens []string
	for len(args) > 0 && args[0] != "--" {
		var err error
		switch a := args[0]; {
		case a == "--tty":
			takeTTY = true
		case a == wire.UnsetGOMAXPROCSArg:
			// Before anything starts a process or copies the environment: the
			// runtime read it at its start, and neither the command nor a
			// forwarder may inherit it.
			_ = os.Unsetenv("GOMAXPROCS")
			oneProc = true
		case a == wire.ScopeAbstractArg:
			scope = true
		case a == wire.AwaitGoArg:
			awaitGo = true
		case strings.HasPrefix(a, "--forward="):
			forwards = append(forwards, strings.TrimPrefix(a, "--forward="))
		case strings.HasPrefix(a, "--proxy-listen="):
			listens = append(listens, strings.TrimPrefix(a, "--proxy-listen="))
		case strings.HasPrefix(a, "--publish="):
			publishes = append(publishes, strings.TrimPrefix(a, "--publish="))
		case strings.HasPrefix(a, "--ready-fd="):
			readyFD, err = strconv.Atoi(strings.TrimPrefix(a, "--ready-fd="))
		case strings.HasPrefix(a, "--nproc="):
			nproc, err = strconv.Atoi(strings.TrimPrefix(a, "--nproc="))
		default:
			say(stderr, "devsandbox-init", "unknown argument %q", a)
			return ExitNotExecutable
		}
		if err != nil {
			say(stderr, "devsandbox-init", "bad %s", args[0])
			return ExitNotExecutable
		}
		args = args[1:]
	}
	if len(args) < 2 {
		say(stderr, "devsandbox-init", "no command")
		return ExitNotFound
	}
	argv := args[1:]
	// The host renamed the loader's variables for bwrap (wire.HostSafeEnv): the
	// command gets them under their names, before anything is started.
	if err := wire.RestoreLoaderEnv(os.Environ(), os.Setenv, os.Unsetenv); err != nil {
		say(stderr, "devsandbox-init", "restoring the command's environment: %v", err)
		return ExitSetupFailed
	}
	failed := func(msg string) int {
		say(stderr, "devsandbox-init", "%s", msg)
		if readyFD >= 0 {
			_ = Fail(readyFD, msg)
		}
		return ExitSetupFailed
	}
	// The readiness socket stays open while the command starts (the report follows
	// its start, below). Non-dumpable, the init is out of reach of the sandbox's
	// processes, which have no capability in its user namespace: no ptrace, no
	// /proc/1/fd, /proc/1/environ or /proc/1/mem. Its children's exec makes them
	// dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return failed(fmt.Sprintf("making the init non-dumpable: %v", err))
	}
	// Nothing the host opened may reach the command or the forwarders this init starts
	// (whose /proc/<pid>/fd the command could open): close every inherited descriptor
	// but the readiness report, before anything else opens one.
	if err := closeInherited(readyFD); err != nil {
		return failed(err.Error())
	}
	// Once subscribed, a signal the host sends waits for the command. The host sends
	// none before the readiness report (it holds them until then), and the report is
	// sent once the command is started and the subscription made (or the command is
	// gone). Subscribing starts the runtime's signal thread and takes a round trip
	// with it per signal, so it runs beside the checks below and the command's start,
	// and is waited for only before the report: the command's exec no longer waits
	// for it. It needs a second P for that: the runtime started with one (the fewer
	// threads and pages before main), so the init takes the default number now.
	if oneProc {
		runtime.SetDefaultGOMAXPROCS()
	}
	sigs := make(chan os.Signal, 8)
	r := &reaper{chld: make(chan os.Signal, 1)}
	subscribed := make(chan struct{})
	go func() {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		r.subscribe()
		close(subscribed)
	}()
	if nproc > 0 {
		if err := SetNproc(nproc); err != nil {
			return failed(err.Error())
		}
	}
	// What bwrap mounted is what the host opened, where it belongs (the host's
	// manifest names each pinned source; see package pin).
	if v, ok := os.LookupEnv(wire.ManifestEnv); ok {
		_ = os.Unsetenv(wire.ManifestEnv)
		m, err := wire.DecodeManifest(v)
		if err == nil {
			err = VerifyMounts(m.Checks)
		}
		if err != nil {
			return failed(err.Error())
		}
	}
	for _, f := range publishes {
		if err := startPublisher(f); err != nil {
			return failed(fmt.Sprintf("publishing port %s: %v", f, err))
		}
	}
	// The proxy's listeners listen from before the command starts, and go to the host
	// with the readiness report (report).
	var handed []int
	for _, addr := range listens {
		if readyFD < 0 {
			return failed(fmt.Sprintf("listening for the proxy on %s: no readiness socket to hand the listener on (--ready-fd)", addr))
		}
		s, err := listenFor(addr)
		if err != nil {
			return failed(fmt.Sprintf("listening for the proxy on %s: %v", addr, err))
		}
		handed = append(handed, s)
	}
	for _, f := range forwards {
		if err := startForwarder(f); err != nil {
			return failed(fmt.Sprintf("starting the proxy forwarder %s: %v", f, err))
		}
	}
	// The host's last check ran beside bwrap's setup and the checks above: nothing
	// of the command runs before it passed.
	if awaitGo {
		if err := awaitHost(readyFD); err != nil {
			return failed(err.Error())
		}
	}
	path, code, msg := lookCommand(argv[0], "")
	if path == "" {
		// The report tells the host that this status is the command's.
		<-subscribed
		if err := report(readyFD, handed, 0); err != nil {
			say(stderr, "devsandbox-init", "reporting readiness: %v", err)
			return ExitNotExecutable
		}
		say(stderr, "devsandbox", "%s: %s", argv[0], msg)
		return code
	}
	if scope {
		// On this goroutine's thread, which the command's fork copies (runInit).
		if _, err := landlock.ScopeAbstractUnix(); err != nil {
			return failed(err.Error())
		}
	}
	return runInit(path, argv, takeTTY, readyFD, handed, sigs, r, subscribed, stderr)
}

// report hands the host the listeners in handed (handListener, which closes each),
// then sends the readiness report on fd, if there is one (-1: none), with a pidfd of
// the command cmd when it is started (0: none; Ready). The listeners go
// only now, once the command has started: devsandbox's hand-off of them to the proxy
// then runs beside the command, not in the way of its start (the wakeup of devsandbox
// it takes would compete with the init for a CPU), and a connection the command makes
// meanwhile waits in the listener's backlog, for the proxy, as any other.
func report(fd int, handed []int, cmd int) error {
	if fd < 0 {
		return nil
	}
	for _, s := range handed {
		if err := handListener(fd, s); err != nil {
			return fmt.Errorf("handing the proxy its listener: %w", err)
		}
	}
	return Ready(fd, cmd)
}

// awaitHost waits for the host's go-ahead (wire.AwaitGoArg) on the readiness socket
// fd: one wire.GoByte. The socket's end (the host gone, or refusing) or another byte
// is an error: the command does not start.
func awaitHost(fd int) error {
	if fd < 0 {
		return errors.New("waiting for the host's go-ahead: no readiness socket (--ready-fd)")
	}
	var b [1]byte
	for {
		n, err := unix.Read(fd, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("waiting for the host's go-ahead: %w", err)
		}
		if n != 1 || b[0] != wire.GoByte {
			return errors.New("the host did not let the command start")
		}
		return nil
	}
}

// SetNproc limits the tasks of the caller's user (in its user namespace) to n,
// soft and hard: a process may lower a hard limit, never raise it.
func SetNproc(n int) error {
	lim := &unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, lim); err != nil {
		return fmt.Errorf("setting the process limit (limits.pids = %d): %v", n, err)
	}
	return nil
}

// runInit starts the command as a child in a session of its own, reports readiness
// on readyFD (-1: none), with the listeners in handed, once subscribed is closed or
// the command is gone, and serves as the sandbox's pid 1 until the command exits,
// passing on the signals that arrive on sigs and reaping with r. The host holds its
// signals until the report, so each one it sends finds the command started and the
// subscription made; a child that exited before r was subscribed to SIGCHLD is
// collected by its first pass, and the command's own exit wakes r through its pidfd
// (watch) meanwhile.
func runInit(path string, argv []string, takeTTY bool, readyFD int, handed []int, sigs <-chan os.Signal, r *reaper, subscribed <-chan struct{}, stderr io.Writer) int {
	sys := &syscall.SysProcAttr{Setsid: true}
	if takeTTY {
		// The command's session owns the terminal and its process group is in the
		// foreground, so shells have job control. Without a terminal on stdin the
		// command runs without one.
		if tty.IsTerminal(0) {
			sys.Setctty, sys.Ctty = true, 0
		}
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: sys})
	if err != nil {
		<-subscribed
		if rerr := report(readyFD, handed, 0); rerr != nil {
			say(stderr, "devsandbox-init", "reporting readiness: %v", rerr)
			return ExitNotExecutable
		}
		code := ExitNotExecutable
		if errors.Is(err, syscall.ENOENT) {
			code = ExitNotFound
		}
		say(stderr, "devsandbox", "%s: %v", argv[0], err)
		return code
	}
	// The reaping runs here, not in a goroutine of its own: the wakeup that finds
	// the command gone leads straight to the init's exit.
	go r.watch(pid)
	for {
		if code, ok := collect(pid); ok {
			if subscribed != nil {
				// The command is gone before the subscription was made: the
				// report still tells the host that this status is the command's.
				if rerr := report(readyFD, handed, 0); rerr != nil {
					say(stderr, "devsandbox-init", "reporting readiness: %v", rerr)
					return ExitNotExecutable
				}
			}
			return code
		}
		select {
		case <-subscribed:
			subscribed = nil
			// The command is not reaped before the report (collect runs on this
			// goroutine alone): its pidfd names it, exited or not.
			if rerr := report(readyFD, handed, pid); rerr != nil {
				// The host would take the command's status for a failed setup:
				// the command must not run unreported.
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				say(stderr, "devsandbox-init", "reporting readiness: %v", rerr)
				return ExitNotExecutable
			}
		case s := <-sigs:
			signalGroup(pid, s.(syscall.Signal))
		case <-r.chld:
		}
	}
}

// say writes one message of prog's on w as one line a terminal shows as it is
// (termsafe.Line): a message may name what the sandbox chose (the command, a path in
// the project), and w is the user's terminal, before the command starts or after it
// ended.
func say(w io.Writer, prog, format string, a ...any) {
	fmt.Fprintf(w, "%s: %s\n", prog, termsafe.Line(fmt.Sprintf(format, a...)))
}

// Fail reports on fd that the sandbox could not be completed, and why.
func Fail(fd int, reason string) error {
	defer unix.Close(fd)
	return unix.Sendmsg(fd, []byte("F"+reason), nil, nil, 0)
}

// Ready sends one readiness message with the caller's credentials on fd and closes it.
// It carries a pidfd of the caller too where the kernel has them (Linux 5.3): the
// host learns from it when the caller, and with it the sandbox's pid namespace, is
// gone, without waiting for bwrap to learn it first. With cmd (the command, a child
// of the caller's not reaped yet; 0: none) it carries a pidfd of cmd after the
// caller's: the host's job control reads from it whether the command has exited,
// whatever other children the caller has (the command's orphans, a publisher).
func Ready(fd, cmd int) error {
	defer unix.Close(fd)
	oob := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	if pidfd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK); err == nil {
		defer unix.Close(pidfd)
		fds := []int{pidfd}
		if cmd > 0 {
			if c, err := unix.PidfdOpen(cmd, unix.PIDFD_NONBLOCK); err == nil {
				defer unix.Close(c)
				fds = append(fds, c)
			}
		}
		oob = append(oob, unix.UnixRights(fds...)...)
	}
	return unix.Sendmsg(fd, []byte{'R'}, oob, nil, 0)
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
