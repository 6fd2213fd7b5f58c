package engineaddr

import (
	"errors"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sockpeer/sockpeertest"
)

// Pin itself refuses a listener of this user in another root directory (a sandbox's,
// planted at the engine's socket), before any request goes to it: the check the
// docker isolator's every connection relies on, shown here by Pin and not only by
// listenerNotPlanted (TestListenerNotPlanted, a fake /proc).
func TestPinRefusesPlantedListener(t *testing.T) {
	sock := sockpeertest.Chrooted(t, t.TempDir(), "docker.sock")
	a, err := Address{Host: "unix://" + sock}.Pin()
	if err == nil {
		a.Unpin()
		t.Fatalf("Pin took the listener in another root directory at %s for the engine", sock)
	}
	if !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "runs in another root directory") {
		t.Errorf("Pin = %v; want ErrPlanted naming another root directory", err)
	}
	if a.Pinned() {
		t.Error("the refused address is still pinned")
	}

	// Positive control: the same listener code in this root directory is taken.
	own := listen(t)
	p, err := own.Pin()
	if err != nil {
		t.Fatalf("Pin of the test's own listener: %v", err)
	}
	p.Unpin()
}

// TestPinRefusesListenerWhosePidWasReused: a sandbox's listener (another root
// directory) hands its socket to a child and exits; its pid, which the socket's
// credentials keep, goes to a process of this user in this root directory (pid_max
// is 32768 on many hosts: a sandbox wraps it in well under a second). The root
// directory read at that pid is then not the listener's: Pin must not take it for
// an engine's.
func TestPinRefusesListenerWhosePidWasReused(t *testing.T) {
	sock, pid := sockpeertest.Orphaned(t, t.TempDir(), "docker.sock")
	sockpeertest.TakePid(t, pid)
	a, err := Address{Host: "unix://" + sock}.Pin()
	if err == nil {
		a.Unpin()
		t.Fatalf("Pin took the listener in another root directory at %s for the engine: its exited process's pid %s now names a process of this root directory", sock, pid)
	}
	if !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("Pin = %v; want ErrPlanted saying the listener has exited", err)
	}
}

// The listener's name and network namespace (asked after Pin, which judged it) are
// read at its pid too: once the sandbox's listener has exited and its pid names a
// process of this user called dockerd or podman, in this root directory and network
// namespace, askPeer must not take the planted socket for an engine's on this
// machine, nor one that binds this machine's files.
func TestAskPeerRefusesListenerWhosePidWasReused(t *testing.T) {
	for _, name := range []string{engineProcess, podmanService} {
		t.Run(name, func(t *testing.T) {
			sock, pid := sockpeertest.Orphaned(t, t.TempDir(), "docker.sock")
			sockpeertest.TakePidAs(t, pid, name)
			p := askPeer(sock, sock, "/proc")
			if p.net.Here || p.binds {
				t.Fatalf("askPeer took the listener in another root directory at %s for an engine here (%+v): its exited process's pid %s now names a process called %s of this root directory", sock, p, pid, name)
			}
			if !strings.Contains(p.net.Why, "has exited") {
				t.Errorf("askPeer = %+v; want the listener that has exited", p)
			}
		})
	}
}
