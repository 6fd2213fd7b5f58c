package sandboxinit

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// AgentWait bounds the container init's wait for the session's ssh agent socket
// (wire.Manifest.Agent), which an exec of its own serves.
const AgentWait = 30 * time.Second

// agentServed reports whether the socket at path is served: the carrier
// (sshagent.ListenCarried) makes it everyone's (0666) only once it listens. Its
// directory is root's: the command cannot have put anything there.
func agentServed(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFSOCK && st.Mode&0o666 == 0o666
}

// waitAgent returns once the socket at path is served (agentServed), or after bound
// with why not. It waits on inotify events of the socket's directory (a socket
// made, or its mode changed), never on a timer.
func waitAgent(path string, bound time.Duration) error {
	if agentServed(path) {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watching for the ssh agent's socket %s: %w", path, err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_MOVED_TO); err != nil {
		return fmt.Errorf("watching for the ssh agent's socket %s: %w", path, err)
	}
	deadline := time.Now().Add(bound)
	buf := make([]byte, 4096)
	for !agentServed(path) { // checked again once watched: nothing is missed
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("the ssh agent's socket %s was not served within %v (its exec in the container did not start; `docker logs` and the daemon's log may say why); the command did not run. Unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", path, bound)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("watching for the ssh agent's socket %s: %w", path, err)
		}
		for {
			if _, err := unix.Read(fd, buf); err != nil {
				break // drained (EAGAIN)
			}
		}
	}
	return nil
}
