package krun

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	spec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/sockpeer"
	"github.com/devsandbox/devsandbox/isolator"
)

// pinService opens the socket file at sock (without following a link) and returns a
// path that names that very socket ("/proc/self/fd/N", the file kept open), once
// the process listening on it is shown to be outside every sandbox: its root
// directory is this process's. A sandbox shown podman's runtime directory read-write
// (a bind of the user's, while podman/ did not exist at its launch, so no mask
// covers it) can make podman/ and listen at the service's socket; a launch that took
// that listener for podman's would send it the container's spec and, on the attach,
// the hello with the session's secrets. Every later connection goes through the
// returned path, so a socket swapped in at sock after the check is never dialled.
func pinService(sock string) (string, *os.File, error) {
	f, err := os.OpenFile(sock, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("%w: opening podman's API socket %s: %w", isolator.ErrUnavailable, sock, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeSocket == 0 {
		f.Close()
		return "", nil, fmt.Errorf("%w: %s, where podman's API socket should be, is not a socket; remove it and run again", isolator.ErrProtection, sock)
	}
	pinned := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := listenerOutside(pinned, sock); err != nil {
		f.Close()
		return "", nil, err
	}
	return pinned, f, nil
}

// listenerOutside checks that the process that listens on the socket at path (sock
// in messages) has this process's root directory: a process in a sandbox (bwrap's
// new root, a container's) has another.
func listenerOutside(path, sock string) error {
	l, err := judgedListener(path, sock)
	if err != nil {
		return err
	}
	l.Close()
	return nil
}

// judgedListener is listenerOutside returning the listener it judged, whose pidfd
// (Linux 6.5) names that very process; the caller closes it.
func judgedListener(path, sock string) (*sockpeer.Listener, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w: podman's API at %s does not answer: %w", isolator.ErrUnavailable, sock, err)
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: asking who listens on %s: %w", isolator.ErrProtection, sock, err)
	}
	var l *sockpeer.Listener
	var credErr error
	if err := raw.Control(func(fd uintptr) { l, credErr = sockpeer.Of(int(fd)) }); err != nil || credErr != nil {
		return nil, fmt.Errorf("%w: asking who listens on %s: %v %v", isolator.ErrProtection, sock, err, credErr)
	}
	// The pid is the one of the process that called listen(2), which may have left
	// the socket to another and exited, its number then anyone's: sockpeer reads the
	// root directory only of a process that still runs (SO_PEERPIDFD, Linux 6.5).
	root, err := l.Root("/proc")
	if root == sockpeer.SameRoot {
		return l, nil
	}
	l.Close()
	switch root {
	case sockpeer.Exited:
		return nil, fmt.Errorf("%w: the process that listened on podman's API socket %s (pid %d) has exited and left the socket to another process, whose root directory cannot be told, as a sandbox's planted listener may; end that sandbox, remove the socket (rm %s) and run again",
			isolator.ErrProtection, sock, l.Pid, sock)
	case sockpeer.Unreadable:
		// Another user's process (a rootful service), or one that hides its /proc
		// entries: where it runs cannot be told, so it is not taken for podman's.
		return nil, fmt.Errorf("%w: devsandbox cannot tell where the process listening on podman's API socket %s runs (pid %d, uid %d: %w), so it does not talk to it; krun.podman_socket must be served by a podman service of your own user (unset it to let devsandbox start one)",
			isolator.ErrProtection, sock, l.Pid, l.Uid, err)
	case sockpeer.OtherRoot, sockpeer.Unseen:
		return nil, fmt.Errorf("%w: the process listening on podman's API socket %s (pid %d) is not podman's service: it runs in another root directory, as a sandbox does; something that can write podman's runtime directory planted it, such as a sandbox whose configuration binds that directory read-write; end that sandbox, remove the socket (rm %s) and run again",
			isolator.ErrProtection, sock, l.Pid, sock)
	default:
		return nil, fmt.Errorf("%w: asking who listens on %s: %w", isolator.ErrProtection, sock, err)
	}
}

// serviceLimits returns the pid of the process listening on the socket at sock and
// its hard limits by spec name (0: unlimited), from /proc/PID/limits.
func serviceLimits(sock string) (pid int, hard map[string]uint64, err error) {
	pid, b, err := listenerLimits(sock)
	if err != nil {
		return pid, nil, err
	}
	hard, err = hardLimits(string(b))
	if err != nil {
		return pid, nil, fmt.Errorf("reading the limits of podman's service (pid %d): %w", pid, err)
	}
	return pid, hard, nil
}

// serviceRlimits are the rlimits of the process listening on sock, soft and hard,
// as a spec gives them (ownLimits).
func serviceRlimits(sock string) ([]spec.POSIXRlimit, error) {
	pid, b, err := listenerLimits(sock)
	if err != nil {
		return nil, err
	}
	l, err := ownLimits(string(b))
	if err != nil {
		return nil, fmt.Errorf("reading the limits of podman's service (pid %d): %w", pid, err)
	}
	return l, nil
}

// listenerLimits reads /proc/PID/limits of the process listening on the socket at
// sock. With a pidfd of that process (SO_PEERPIDFD, Linux 6.5) it must still run once
// the file is read, so that what was read is its own and not a later process's that
// took the number (the socket's credentials keep the pid of the process that
// listened, which may have left the socket to another and exited). An older
// kernel's listener is read by its pid alone.
func listenerLimits(sock string) (int, []byte, error) {
	l, err := listener(sock)
	if err != nil {
		return 0, nil, err
	}
	defer l.Close()
	pid := int(l.Pid)
	if l.Exited() {
		return pid, nil, fmt.Errorf("the process that listens on podman's API socket %s (pid %d) has exited, leaving the socket to another: its limits cannot be read; stop the process serving %s, or remove the socket, and run again", sock, pid, sock)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return pid, nil, fmt.Errorf("reading the limits of podman's service (pid %d): %w", pid, err)
	}
	if l.Exited() {
		return pid, nil, fmt.Errorf("the process that listens on podman's API socket %s (pid %d) has exited while its limits were read, so they may be another process's; run again", sock, pid)
	}
	return pid, b, nil
}

// listenerPid is the pid of the process listening on the socket at sock.
func listenerPid(sock string) (int, error) {
	l, err := listener(sock)
	if err != nil {
		return 0, err
	}
	l.Close()
	return int(l.Pid), nil
}

// listener is the process listening on the socket at sock (close it), one this
// PID namespace sees.
func listener(sock string) (*sockpeer.Listener, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	var l *sockpeer.Listener
	var credErr error
	if err := raw.Control(func(fd uintptr) { l, credErr = sockpeer.Of(int(fd)) }); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, credErr
	}
	if l.Pid <= 0 {
		l.Close()
		return nil, fmt.Errorf("the process listening on %s has no pid here", sock)
	}
	return l, nil
}

// stopService ends the idle podman service devsandbox started on sock, whose
// listener is pid: it must be outside every sandbox (listenerOutside) and the child
// of devsandbox's supervisor for sock, which ends once podman does (it removes the
// socket as it goes). It returns once the supervisor is gone, so that the socket
// of a service started after it is not removed by it. Both are signalled and
// watched through pidfds of the processes judged, never by pid: once the service
// or its supervisor has ended, its pid may name any process of the user's.
func stopService(sock string, pid int) error {
	l, err := judgedListener(sock, sock)
	if err != nil {
		return err
	}
	defer l.Close()
	if int(l.Pid) != pid {
		return fmt.Errorf("the process listening on %s (pid %d) is not the podman service whose limits devsandbox read (pid %d): another took its place", sock, l.Pid, pid)
	}
	svc := l.Pidfd()
	if svc < 0 {
		// An older kernel (no SO_PEERPIDFD): the process that has the pid now,
		// judged by it alone as listenerOutside did, is signalled from here on.
		if svc, err = unix.PidfdOpen(pid, 0); err != nil {
			return fmt.Errorf("stopping podman's service (pid %d): %w", pid, err)
		}
		defer unix.Close(svc)
	}
	ppid, err := parentPid(pid)
	if err != nil {
		return err
	}
	notOurs := fmt.Errorf("the process listening on %s (pid %d) is not the podman service devsandbox started: its parent (pid %d) is not devsandbox's supervisor", sock, pid, ppid)
	sup, err := unix.PidfdOpen(ppid, 0)
	if errors.Is(err, unix.ESRCH) {
		return notOurs
	} else if err != nil {
		return fmt.Errorf("watching the supervisor (pid %d) of podman's service on %s: %w", ppid, sock, err)
	}
	defer unix.Close(sup)
	// sup names the service's parent if the service, still running, still has that
	// parent once sup is open (a process whose parent ends is left to an older one,
	// never to a later one that took the number); the cmdline read is sup's if sup
	// still runs once it is read.
	if p, err := parentPid(pid); err != nil || p != ppid || !pidfdLives(svc) {
		return notOurs
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if args := strings.Split(string(b), "\x00"); len(args) < 3 || args[1] != SuperviseArg || args[2] != sock || !pidfdLives(sup) {
		return notOurs
	}
	if err := unix.PidfdSendSignal(svc, unix.SIGTERM, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stopping podman's service (pid %d): %w", pid, err)
	}
	killAt := time.Now().Add(5 * time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for killed := false; ; {
		until := deadline
		if !killed {
			until = killAt
		}
		ended, err := pidfdEnds(sup, time.Until(until))
		if err != nil {
			return fmt.Errorf("waiting for the supervisor (pid %d) of podman's service on %s: %w", ppid, sock, err)
		}
		switch {
		case ended:
			return nil
		case !killed:
			_ = unix.PidfdSendSignal(svc, unix.SIGKILL, nil, 0) // as the supervisor does after podman's 5 s
			killed = true
		default:
			return fmt.Errorf("podman's service on %s (pid %d) and its supervisor (pid %d) did not end within 15 s", sock, pid, ppid)
		}
	}
}

// pidfdLives reports whether the process of pidfd has not exited.
func pidfdLives(pidfd int) bool { return unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil }

// pidfdEnds waits up to d for the process of pidfd to exit (a zombie has) and
// reports whether it did.
func pidfdEnds(pidfd int, d time.Duration) (bool, error) {
	for {
		ms := max(int(d.Milliseconds()), 0)
		start := time.Now()
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			d -= time.Since(start)
			continue
		}
		return n > 0, err
	}
}

// parentPid is pid's parent, from /proc/PID/stat.
func parentPid(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	return strconv.Atoi(f[1])
}
