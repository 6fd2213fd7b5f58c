package krun

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

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
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%w: podman's API at %s does not answer: %w", isolator.ErrUnavailable, sock, err)
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: asking who listens on %s: %w", isolator.ErrProtection, sock, err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return fmt.Errorf("%w: asking who listens on %s: %v %v", isolator.ErrProtection, sock, err, credErr)
	}
	var root, theirs unix.Stat_t
	if err := unix.Stat("/", &root); err != nil {
		return fmt.Errorf("%w: %w", isolator.ErrProtection, err)
	}
	if cred.Pid > 0 {
		if err := unix.Stat("/proc/"+strconv.Itoa(int(cred.Pid))+"/root/", &theirs); err != nil {
			// Another user's process (a rootful service), or one that hides its /proc
			// entries: where it runs cannot be told, so it is not taken for podman's.
			return fmt.Errorf("%w: devsandbox cannot tell where the process listening on podman's API socket %s runs (pid %d, uid %d: %w), so it does not talk to it; krun.podman_socket must be served by a podman service of your own user (unset it to let devsandbox start one)",
				isolator.ErrProtection, sock, cred.Pid, cred.Uid, err)
		}
	}
	if cred.Pid <= 0 || theirs.Dev != root.Dev || theirs.Ino != root.Ino {
		return fmt.Errorf("%w: the process listening on podman's API socket %s (pid %d) is not podman's service: it runs in another root directory, as a sandbox does; something that can write podman's runtime directory planted it, such as a sandbox whose configuration binds that directory read-write; end that sandbox, remove the socket (rm %s) and run again",
			isolator.ErrProtection, sock, cred.Pid, sock)
	}
	return nil
}
