package landlock

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ScopeABI is the first Landlock ABI with scopes (Linux 6.12).
const ScopeABI = 6

// ABI is the kernel's Landlock ABI version; 0 when it has none (before Linux 5.13,
// or Landlock not enabled at boot).
func ABI() int {
	abi, err := abiVersion()
	if err != nil {
		return 0
	}
	return abi
}

func abiVersion() (int, error) {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(abi), nil
}

// ScopeAbstractUnix restricts the calling thread, and every process it starts from
// now on, to the abstract Unix sockets made inside its Landlock domain: a connect(2)
// to one a process outside made (the host's, reachable where the sandbox shares the
// host's network namespace: an X server's `@/tmp/.X11-unix/X0`, a D-Bus bus at an
// abstract address) fails with EPERM. A Landlock domain belongs to a thread, so the
// caller locks its goroutine to the thread first and starts the command from it.
// applied is false, with no error, where the kernel has no Landlock scopes (before
// Linux 6.12, or Landlock not enabled): the caller reports it.
func ScopeAbstractUnix() (applied bool, err error) {
	runtime.LockOSThread()
	abi, err := abiVersion()
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return false, nil
		}
		return false, fmt.Errorf("asking the kernel for its Landlock version: %w", err)
	}
	if abi < ScopeABI {
		return false, nil
	}
	// The ABI 6 layout: handled file system and network accesses (none: nothing of
	// the view changes), then the scopes.
	attr := struct{ fs, net, scoped uint64 }{scoped: unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	runtime.KeepAlive(&attr)
	if e != 0 {
		return false, fmt.Errorf("making a Landlock ruleset scoping abstract Unix sockets: %w", e)
	}
	defer unix.Close(int(fd))
	// Per thread, as the domain is: bwrap set it for the process already when it
	// loaded the syscall filter.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return false, fmt.Errorf("restricting the sandbox to its own abstract Unix sockets (Landlock): %w", e)
	}
	return true, nil
}
