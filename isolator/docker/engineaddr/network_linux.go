package engineaddr

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/sockpeer"
)

// engineListener reports whether a process called name, of user uid, listening on an
// engine's socket is taken for the engine itself: dockerd, or root's systemd, which
// listens on docker.socket for a socket-activated rootful dockerd (Debian's and
// Ubuntu's docker.io and docker-ce install it) and hands it the listening socket. A
// user's systemd is not taken: a rootless engine's network is rootlesskit's, not this
// machine's.
func engineListener(name string, uid uint32) bool {
	return name == engineProcess || name == "systemd" && uid == 0
}

// hostNetwork is HostNetwork with /proc at proc (tests give another): the pinned
// socket's answer, asked once, when a is pinned (Pin); else a connection of its own
// to the socket's path.
func hostNetwork(a Address, proc string) Network {
	sock, ok := unixSocket(a.Host)
	if !ok {
		return Network{Why: "not a Unix socket on Linux"}
	}
	if a.pin != nil {
		return a.pin.peerOf(sock, proc).net
	}
	return askPeer(sock, sock, proc).net
}

// peer is what the kernel and /proc tell of the process listening on an engine's
// socket.
type peer struct {
	net Network
	// binds is true when the listener is an engine's own process on this machine
	// (bindListener): the engine then binds this machine's files.
	binds bool
	// who names the listener ("dockerd" (pid 812, uid 0)), or says why it could not
	// be told; for doctor.
	who string
	// named is true when who names the listener (its comm was read).
	named bool
	// name is the listener's name (its comm), "" when it could not be read.
	name string
}

// bindListener reports whether a process called name, of user uid, listening on an
// engine's socket is the engine's own on this machine, which binds this machine's
// files: dockerd (rootful or rootless, whatever its network namespace), a systemd
// (root's for docker.socket, a user's for a rootless engine's socket unit), or podman's
// service, root's or this user's (ours: the uids this process runs as), whose root
// directory is this process's (sameRoot; rootless podman runs in a mount namespace of
// its own, a copy of the host's, so the namespace itself differs). A relay (ssh -L,
// socat, Docker Desktop's backend) is not: its engine may run elsewhere. Another
// user's podman is not: it binds what that user may read.
func bindListener(name string, uid uint32, ours func(uint32) bool, sameRoot func() bool) bool {
	switch name {
	case engineProcess, "systemd":
		return true
	case podmanService:
		return (uid == 0 || ours(uid)) && sameRoot()
	}
	return false
}

// ourUID reports whether uid is one this process runs as.
func ourUID(uid uint32) bool { return uid == uint32(os.Getuid()) || uid == uint32(os.Geteuid()) }

// askPeer connects to the socket at path (sock in messages: path may be the pinned
// socket's /proc/self/fd/N) and asks who listens (SO_PEERCRED), reading that
// process's name, network namespace and root directory in /proc at proc. What is
// read at its pid is the listener's only while the listener runs (its pid then
// anyone's): with its pidfd (SO_PEERPIDFD, Linux 6.5), one that has exited is
// elsewhere.
//
// The listener's network namespace is compared by /proc/PID/net/dev, not
// /proc/PID/ns/net: the namespace link needs ptrace access to the process, which a
// user has not to root's dockerd, while /proc/PID/net is that namespace's own view of
// /proc/net, which every user may read; each namespace's entries have inode numbers
// of their own, so the same file in two namespaces never has the same inode.
func askPeer(path, sock, proc string) peer {
	elsewhere := func(format string, args ...any) peer {
		why := fmt.Sprintf(format, args...)
		return peer{net: Network{Why: why}, who: why}
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return elsewhere("asking who listens on %s: %v", sock, err)
	}
	defer unix.Close(fd)
	// Non-blocking: a listener whose queue is full is not waited for (it counts as
	// elsewhere).
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return elsewhere("connecting to %s to ask who listens: %v", sock, err)
	}
	cred, err := sockpeer.Of(fd)
	if err != nil {
		return elsewhere("asking who listens on %s: %v", sock, err)
	}
	defer cred.Close()
	// Not named and not binding: what its pid names now is anyone's.
	exited := func() peer {
		why := fmt.Sprintf("the process that listened on %s (pid %d) has exited and left the socket to another process, whose name and network cannot be told", sock, cred.Pid)
		return peer{net: Network{Why: why}, who: why}
	}
	if cred.Pid <= 0 {
		return elsewhere("the process listening on %s is in a PID namespace this one does not see", sock)
	}
	pid := strconv.Itoa(int(cred.Pid))
	comm, err := os.ReadFile(proc + "/" + pid + "/comm")
	if err != nil {
		return elsewhere("reading the name of the process listening on %s (pid %s): %v", sock, pid, err)
	}
	if cred.Exited() {
		return exited()
	}
	name := strings.TrimSuffix(string(comm), "\n")
	binds := bindListener(name, cred.Uid, ourUID, func() bool {
		root, _ := cred.Root(proc)
		return root == sockpeer.SameRoot
	})
	who := fmt.Sprintf("the process listening on %s is %q (pid %s, uid %d)", sock, name, pid, cred.Uid)
	elsewhere = func(format string, args ...any) peer {
		return peer{net: Network{Why: fmt.Sprintf(format, args...)}, binds: binds, who: who, named: true, name: name}
	}
	if !engineListener(name, cred.Uid) {
		return elsewhere("the process listening on %s is %q (pid %s, uid %d), not %s or root's systemd: a relay to an engine that may run elsewhere", sock, name, pid, cred.Uid, engineProcess)
	}
	var theirs, ours unix.Stat_t
	if err := unix.Stat(proc+"/"+pid+"/net/dev", &theirs); err != nil {
		return elsewhere("reading the network namespace of %s (pid %s) listening on %s: %v", name, pid, sock, err)
	}
	if err := unix.Stat(proc+"/self/net/dev", &ours); err != nil {
		return elsewhere("reading this process's network namespace: %v", err)
	}
	if theirs.Dev != ours.Dev || theirs.Ino != ours.Ino {
		return elsewhere("%s (pid %s) listening on %s runs in another network namespace (a rootless engine's, rootlesskit's)", name, pid, sock)
	}
	if cred.Exited() {
		return exited()
	}
	return peer{net: Network{Here: true}, binds: binds, who: who, named: true, name: name}
}
