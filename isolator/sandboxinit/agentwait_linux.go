package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
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

// agentDirApart checks that dir, where an exec of the carrier's uid serves the
// agent's socket, is not the command's (uid): neither its own nor writable by
// others. The command, without CAP_FOWNER or CAP_DAC_OVERRIDE, can then neither
// replace the socket nor plant another there. A container made before the carrier
// had a uid of its own on a rootless engine (whose command is the container's root)
// has root's: the command would own it, so it does not run.
func agentDirApart(dir string, uid int) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("the ssh agent's directory %s: %w; the command did not run. Unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", dir, err)
	}
	if int(st.Uid) == uid || st.Mode&0o022 != 0 {
		return fmt.Errorf("the ssh agent's directory %s is the command's to write (owner %d, mode %#o; the command is uid %d): it could replace the agent's socket. The command did not run. Run `devsandbox sandboxes prune` (a kept container made by an older devsandbox), or unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", dir, st.Uid, st.Mode&0o7777, uid)
	}
	return nil
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

// AgentProbeWait bounds the proof that the bound agent socket is the session's relay
// (a local relay answers within a millisecond; an engine in a VM whose file sharing
// bound the socket never does).
const AgentProbeWait = 300 * time.Millisecond

// agent gives the command the session's ssh agent: the relay's socket the engine
// bound (m.AgentBound) once it proved itself with the hello's key, else the socket an
// exec serves (m.Agent), for which the init asks the host (AgentStreamMarker) and
// waits. Either way the command starts only once SSH_AUTH_SOCK is served.
func (c *container) agent(m *wire.Manifest) error {
	if m.AgentBound != "" {
		// Any failure (no such socket, refused, no or a wrong answer in time) falls
		// back to the stream: never a broken agent.
		if sshagent.Probe(m.AgentBound, m.AgentKey, AgentProbeWait) == nil {
			return os.Setenv("SSH_AUTH_SOCK", m.AgentBound)
		}
		if c.framed {
			fmt.Fprint(c.stderr, wire.AgentStreamMarker)
		}
	}
	if err := agentDirApart(filepath.Dir(m.Agent), os.Getuid()); err != nil {
		return err
	}
	if err := waitAgent(m.Agent, AgentWait); err != nil {
		return err
	}
	return os.Setenv("SSH_AUTH_SOCK", m.Agent)
}
