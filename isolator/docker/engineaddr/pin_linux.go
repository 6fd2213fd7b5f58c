package engineaddr

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/sockpeer"
)

// Pin opens a's Unix socket and returns a holding it: every later connection
// (DialPath) goes to that very socket, and HostNetwork's check is asked of it, so a
// socket swapped in at the path afterwards (where the user may write: a rootless
// engine's $XDG_RUNTIME_DIR/docker.sock, a relay's directory) is never dialled and
// never judged in its place. A link at the path is followed here, once: what it led
// to is what is checked and dialled. Another address is returned as it is. The
// socket stays open until Unpin (the caller's, or its client's Close: docker.Dial's);
// an address dropped without it is closed by the file's finalizer.
func (a Address) Pin() (Address, error) {
	sock, ok := unixSocket(a.Host)
	if !ok || a.pin != nil {
		return a, nil
	}
	f, err := os.OpenFile(sock, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return a, err
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeSocket == 0 {
		f.Close()
		return a, fmt.Errorf("%s is %w", sock, ErrNotSocket)
	}
	a.pin = &pinned{f: f, path: "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))}
	if err := listenerNotPlanted(a.pin.path, sock, "/proc"); err != nil {
		f.Close()
		a.pin = nil
		return a, err
	}
	return a, nil
}

// listenerNotPlanted refuses a listener on the socket at path (sock in messages)
// that a sandbox of this user may have planted: a process of this user (a sandbox's
// processes are, seen from here) whose root directory is not this process's (bwrap's
// new root, a container's), or whose root cannot be told (another PID namespace,
// /proc hidden). A sandbox shown the socket's directory read-write (a rootless
// engine's $XDG_RUNTIME_DIR, a forwarded socket's directory, bound by the user) can
// listen there while no engine does, under the name dockerd, which any process may
// give itself; a launch would send it the containers' configuration and, on the
// attach, the session's secrets. Another user's listener (root's dockerd) is not
// judged here: no sandbox of this user runs as another user. A rootless engine
// (rootlesskit's namespaces) keeps the host's root directory.
func listenerNotPlanted(path, sock, proc string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("asking who listens on %s: %w", sock, err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); errors.Is(err, unix.ECONNREFUSED) {
		// Nobody listens on this socket, and nobody can later: a listener binds a
		// socket of its own. The client's connections fail as an engine's that
		// does not answer.
		return nil
	} else if err != nil {
		// A full queue (EAGAIN) included: a planted listener could fill its own.
		return fmt.Errorf("connecting to %s to ask who listens: %w", sock, err)
	}
	l, err := sockpeer.Of(fd)
	if err != nil {
		return fmt.Errorf("asking who listens on %s: %w", sock, err)
	}
	defer l.Close()
	if l.Uid != uint32(os.Getuid()) && l.Uid != uint32(os.Geteuid()) {
		return nil
	}
	planted := func(why string) error {
		return fmt.Errorf("%w: the process listening on the docker engine's socket %s (pid %d, your user) %s, as a sandbox's does: something that can write that directory planted it, such as a sandbox whose configuration binds it read-write; end that sandbox, remove the socket (rm %s) and run again",
			ErrPlanted, sock, l.Pid, why, sock)
	}
	if l.Pid <= 0 {
		return planted("runs in a PID namespace this one does not see, so its root directory cannot be told")
	}
	// The pid is the one of the process that called listen(2), which may have handed
	// the socket to another and exited: its number is then anyone's (pid_max is
	// 32768 on many hosts, a sandbox wraps it in a second). sockpeer reads the root
	// directory only of a process that still runs (SO_PEERPIDFD, Linux 6.5).
	switch root, err := l.Root(proc); root {
	case sockpeer.SameRoot:
		return nil
	case sockpeer.OtherRoot:
		return planted("runs in another root directory")
	case sockpeer.Exited:
		return planted("has exited and left the socket to another process, whose root directory cannot be told")
	case sockpeer.Unreadable:
		return planted(fmt.Sprintf("has a root directory that cannot be read (%v)", err))
	default:
		return fmt.Errorf("asking who listens on %s: %w", sock, err)
	}
}
