package krun

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens /proc/PID/ns/net and, with ioctl NS_GET_USERNS, the user namespace that
// owns it. Rootless podman's container network namespace belongs to one of podman's
// user namespaces — its own, or with --userns=keep-id and podman 4's slirp4netns the
// container's — and only that namespace's root may change its firewall. Entering
// the namespaces from descriptors, rather than by PID, also pins them: a PID reused
// after the container ended cannot redirect the calls.
func (hostNetns) Open(pid int) (user, net *os.File, err error) {
	net, err = os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, nil, fmt.Errorf("opening the container's network namespace: %w", err)
	}
	fd, err := unix.IoctlRetInt(int(net.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		net.Close()
		return nil, nil, fmt.Errorf("finding the user namespace that owns the container's network namespace: %w", err)
	}
	user = os.NewFile(uintptr(fd), "userns")
	var owner, own unix.Stat_t
	if err := unix.Fstat(fd, &owner); err != nil {
		user.Close()
		net.Close()
		return nil, nil, fmt.Errorf("inspecting the user namespace: %w", err)
	}
	if unix.Stat("/proc/self/ns/user", &own) == nil && own.Dev == owner.Dev && own.Ino == owner.Ino {
		user.Close()
		return nil, net, nil
	}
	return user, net, nil
}
