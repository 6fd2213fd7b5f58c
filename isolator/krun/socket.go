package krun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// ServiceIdle is the idle timeout of a podman service devsandbox starts: it serves the
// runs that follow within that time and then exits on its own, so a devsandbox that
// was killed never leaves it running.
const ServiceIdle = 10 * time.Second

// Host is the host access of the backend (a struct of functions in tests).
type Host interface {
	// KVM opens /dev/kvm for reading and writing.
	KVM() error
	// HardLimits returns the hard RLIMIT_NOFILE and RLIMIT_NPROC (0: unlimited).
	HardLimits() (nofile, nproc uint64)
	// Listening reports whether a Unix socket at path accepts connections.
	Listening(path string) bool
	// StartService starts `podman system service` on path and returns once it listens.
	StartService(ctx context.Context, path string) error
	// Systemd reports whether systemd is the init (else podman needs cgroupfs).
	Systemd() bool
}

type osHost struct{}

func (osHost) KVM() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func (osHost) HardLimits() (nofile, nproc uint64) {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil && r.Max != unix.RLIM_INFINITY {
		nofile = r.Max
	}
	if unix.Getrlimit(unix.RLIMIT_NPROC, &r) == nil && r.Max != unix.RLIM_INFINITY {
		nproc = r.Max
	}
	return nofile, nproc
}

func (osHost) Listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (osHost) Systemd() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// StartService starts podman's API service on path, detached (its own session, so
// neither a terminal's signals nor devsandbox's end reach it), with ServiceIdle as its
// idle timeout. Concurrent starts are serialised by a lock next to the socket.
func (h osHost) StartService(ctx context.Context, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "devsandbox-service.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	if h.Listening(path) {
		return nil // another devsandbox started it meanwhile
	}
	_ = os.Remove(path) // a stale socket of a service that exited
	logPath := filepath.Join(dir, "devsandbox-service.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	podman, err := exec.LookPath("podman")
	if err != nil {
		return fmt.Errorf("%w: podman is not installed: %v", isolator.ErrUnavailable, err)
	}
	cmd := exec.Command(podman, serviceArgs(h.Systemd(), path)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting podman system service: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("podman system service exited (%v): %s", err, lastLine(b))
		case <-deadline.C:
			return fmt.Errorf("podman system service did not listen on %s within 15s (see %s)", path, logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if h.Listening(path) {
				return nil // the service runs on alone; it exits when idle
			}
		}
	}
}

// serviceArgs is podman's argv for the API service. Without systemd as init, podman's
// default systemd cgroup manager cannot work; cgroupfs does.
func serviceArgs(systemd bool, path string) []string {
	var args []string
	if !systemd {
		args = append(args, "--cgroup-manager=cgroupfs")
	}
	return append(args, "system", "service", "--time="+strconv.Itoa(int(ServiceIdle/time.Second)), "unix://"+path)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// socketCandidates lists where podman's API socket is looked for, in order:
// krun.podman_socket, else the user's ($XDG_RUNTIME_DIR, or /run/user/UID), else the
// system service's (root only). The first is where devsandbox starts a service.
func socketCandidates(configured, runtimeDir string, uid int) []string {
	if configured != "" {
		return []string{strings.TrimPrefix(configured, "unix://")}
	}
	var c []string
	switch {
	case runtimeDir != "":
		c = append(c, filepath.Join(runtimeDir, "podman", "podman.sock"))
	case uid != 0:
		c = append(c, filepath.Join("/run/user", strconv.Itoa(uid), "podman", "podman.sock"))
	}
	if uid == 0 {
		c = append(c, "/run/podman/podman.sock")
	}
	return c
}

// errNoSocket says where devsandbox looked.
var errNoSocket = errors.New("no podman API socket")

// socket returns a listening API socket, starting a service on the first candidate
// when none listens.
func (b *Isolator) socket(ctx context.Context, h Host) (string, error) {
	c := socketCandidates(b.Settings.Socket, b.Settings.RuntimeDir, b.Settings.UID)
	if len(c) == 0 {
		return "", fmt.Errorf("%w: %w: XDG_RUNTIME_DIR is unset; set it (rootless podman needs it) or krun.podman_socket", isolator.ErrUnavailable, errNoSocket)
	}
	for _, p := range c {
		if h.Listening(p) {
			return p, nil
		}
	}
	if err := h.StartService(ctx, c[0]); err != nil {
		if errors.Is(err, isolator.ErrUnavailable) {
			return "", err
		}
		return "", fmt.Errorf("%w: %w at %s and podman's service could not be started: %v", isolator.ErrUnavailable, errNoSocket, strings.Join(c, ", "), err)
	}
	b.phase("podman service")
	return c[0], nil
}
