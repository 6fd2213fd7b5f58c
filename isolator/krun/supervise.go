package krun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// superviseLogPrefix starts each line the supervisor writes to the service log.
const superviseLogPrefix = "devsandbox-krun supervise: "

// SuperviseArg is devsandbox-krun's argument for the supervisor role:
//
//	devsandbox-krun supervise SOCKET RUNTIME
//
// It runs `podman --runtime RUNTIME system service` on SOCKET as its child and ends it
// once no devsandbox has used it for ServiceIdle. Every devsandbox-krun that uses the
// service holds a shared lock on SOCKET.users for its life (the kernel drops it when the
// process ends, however it ends); the supervisor looks for the lock free. The service
// dies with its supervisor (PR_SET_PDEATHSIG).
const SuperviseArg = "supervise"

// usersFile is the lock users of a devsandbox-started service hold.
func usersFile(sock string) string { return sock + ".users" }

// holdUsers takes the shared users lock of sock. The lock lasts while the returned
// file is open (and reachable: a collected *os.File closes its descriptor). A
// supervisor holds it exclusively while it ends its idle service (up to podman's
// stop, 5 s, and the kill after): the run waits as takeLock does, and gives up when
// ctx ends; waiting is takeLock's.
func holdUsers(ctx context.Context, sock string, waiting func()) (*os.File, error) {
	// The supervisor removes the file when it ends the service (leftfiles.go).
	return takeLock(ctx, usersFile(sock), unix.LOCK_SH, waiting)
}

// Supervise is the supervisor role; it returns the exit status.
func Supervise(sock, rt string, stderr io.Writer) int {
	users, err := os.OpenFile(usersFile(sock), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, superviseLogPrefix+"%v\n", plantedLock(usersFile(sock), err))
		return 1
	}
	// Held for the supervisor's life, and podman's (they share the open log): the
	// files of a service whose log is not locked may go (leftfiles.go).
	_ = unix.Flock(int(os.Stdout.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	podman, err := exec.LookPath("podman")
	if err != nil {
		fmt.Fprintf(stderr, superviseLogPrefix+"%v\n", err)
		return 1
	}
	// The service's open files: its soft limit raised to its hard one, which it
	// inherits from the devsandbox that started it and which bounds every container's
	// (runc cannot raise a hard limit; a run that asks for more than the service has
	// restarts an idle service, see serviceFits).
	var nofile unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil && nofile.Cur < nofile.Max {
		nofile.Cur = nofile.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &nofile)
	}
	// The death signal is sent when the thread that started the child ends: this one
	// stays locked for the supervisor's life.
	runtime.LockOSThread()
	cmd := exec.Command(podman, serviceArgs(osHost{}.Systemd(), rt, sock)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = serviceSysProcAttr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, superviseLogPrefix+"%v\n", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	idleSince := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			fmt.Fprintf(stderr, superviseLogPrefix+"podman system service ended: %v\n", err)
			_ = os.Remove(sock)
			return 0
		case <-tick.C:
		}
		if err := unix.Flock(int(users.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			if !errors.Is(err, unix.EWOULDBLOCK) {
				fmt.Fprintf(stderr, superviseLogPrefix+"%v\n", err)
			}
			idleSince = time.Now()
			continue
		}
		if time.Since(idleSince) < ServiceIdle {
			_ = unix.Flock(int(users.Fd()), unix.LOCK_UN)
			continue
		}
		// Idle: while the lock is held no run can start using the service; the next
		// one finds no socket and starts a new service, with files of its own.
		_ = os.Remove(sock)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		removeSet(sock, users)
		_ = unix.Flock(int(users.Fd()), unix.LOCK_UN)
		return 0
	}
}
