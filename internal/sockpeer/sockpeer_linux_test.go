package sockpeer

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/sockpeer/sockpeertest"
)

// ask connects to the socket at sock and asks who listens, SO_PEERPIDFD read by
// pidfdOf (nil: the kernel's).
func ask(t *testing.T, sock string, pidfdOf func(int) (int, error)) *Listener {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		t.Fatalf("connecting to %s: %v", sock, err)
	}
	if pidfdOf == nil {
		pidfdOf = peerPidfd
	}
	l, err := of(fd, pidfdOf)
	if err != nil {
		t.Fatalf("asking who listens on %s: %v", sock, err)
	}
	t.Cleanup(l.Close)
	return l
}

// ownListener listens on a socket of the test's own and returns its path.
func ownListener(t *testing.T) string {
	sock := filepath.Join(t.TempDir(), "own.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return sock
}

// olderKernel is SO_PEERPIDFD before Linux 6.5.
func olderKernel(int) (int, error) { return -1, unix.ENOPROTOOPT }

// fakeProc is a /proc whose self/root is / and whose entry for pid has root as its
// root directory ("" for none).
func fakeProc(t *testing.T, pid int32, root string) string {
	proc := t.TempDir()
	dir := filepath.Join(proc, strconv.Itoa(int(pid)))
	for _, d := range []string{filepath.Join(proc, "self"), dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(proc, "self", "root")); err != nil {
		t.Fatal(err)
	}
	if root != "" {
		if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
			t.Fatal(err)
		}
	}
	return proc
}

// The test's own listener: its pid and user, in this root directory; the same with
// an older kernel's (no pidfd, the pid read as it is).
func TestOwnListener(t *testing.T) {
	sock := ownListener(t)
	for name, pidfdOf := range map[string]func(int) (int, error){"this kernel": nil, "an older kernel": olderKernel} {
		l := ask(t, sock, pidfdOf)
		if int(l.Pid) != os.Getpid() || l.Uid != uint32(os.Geteuid()) || l.Gid != uint32(os.Getegid()) {
			t.Errorf("%s: listener pid %d uid %d gid %d, want this process's (%d, %d, %d)", name, l.Pid, l.Uid, l.Gid, os.Getpid(), os.Geteuid(), os.Getegid())
		}
		if r, err := l.Root("/proc"); r != SameRoot || err != nil {
			t.Errorf("%s: Root = %v, %v; want SameRoot", name, r, err)
		}
		if l.Exited() {
			t.Errorf("%s: Exited of this process, which runs", name)
		}
		if pidfdOf == nil && l.Pidfd() < 0 {
			t.Errorf("%s: no pidfd of this process's listener", name)
		}
	}
	l := ask(t, sock, olderKernel)
	if l.pidfd != -1 || l.pidfdErr != nil {
		t.Errorf("an older kernel's listener: pidfd %d, error %v; want none, judged by its pid", l.pidfd, l.pidfdErr)
	}
	l.Close()
	l.Close() // twice: nothing to do
}

// Root reads the listener's root directory in /proc at proc: another directory is
// another root; one that cannot be read is Unreadable, with why; a pid this PID
// namespace does not see is Unseen; SO_PEERPIDFD's ESRCH (the listener has exited)
// is Exited, and its other errors are returned.
func TestRoot(t *testing.T) {
	sock := ownListener(t)
	l := ask(t, sock, nil)
	if r, err := l.Root(fakeProc(t, l.Pid, "/")); r != SameRoot || err != nil {
		t.Errorf("a fake /proc naming / : Root = %v, %v; want SameRoot", r, err)
	}
	if r, err := l.Root(fakeProc(t, l.Pid, t.TempDir())); r != OtherRoot || err != nil {
		t.Errorf("a fake /proc naming another directory: Root = %v, %v; want OtherRoot", r, err)
	}
	if r, err := l.Root(fakeProc(t, l.Pid, "")); r != Unreadable || err == nil {
		t.Errorf("a fake /proc without the listener's root: Root = %v, %v; want Unreadable and why", r, err)
	}
	if r, err := l.Root(t.TempDir()); r != 0 || err == nil {
		t.Errorf("a /proc without this process's root: Root = %v, %v; want an error", r, err)
	}
	older := ask(t, sock, olderKernel)
	if r, err := older.Root(fakeProc(t, older.Pid, t.TempDir())); r != OtherRoot || err != nil {
		t.Errorf("an older kernel's listener in another root: Root = %v, %v; want OtherRoot", r, err)
	}
	for _, tc := range []struct {
		name string
		l    Listener
		want Root
	}{
		{"pid 0", Listener{Pid: 0, pidfd: -1}, Unseen},
		{"SO_PEERPIDFD: ESRCH", Listener{Pid: 1, pidfd: -1, pidfdErr: unix.ESRCH}, Exited},
		{"SO_PEERPIDFD: ESRCH, pid 0", Listener{Pid: 0, pidfd: -1, pidfdErr: unix.ESRCH}, Exited},
	} {
		if r, err := tc.l.Root("/proc"); r != tc.want || err != nil {
			t.Errorf("%s: Root = %v, %v; want %v", tc.name, r, err, tc.want)
		}
	}
	bad := Listener{Pid: 1, pidfd: -1, pidfdErr: unix.EMFILE}
	if r, err := bad.Root("/proc"); r != 0 || err != unix.EMFILE {
		t.Errorf("SO_PEERPIDFD failed (EMFILE): Root = %v, %v; want its error", r, err)
	}
}

// A listener of this user in another root directory (chroot, as a sandbox's is).
func TestChrootedListener(t *testing.T) {
	sock := sockpeertest.Chrooted(t, t.TempDir(), "planted.sock")
	l := ask(t, sock, nil)
	if r, err := l.Root("/proc"); r != OtherRoot || err != nil {
		t.Errorf("a chrooted listener: Root = %v, %v; want OtherRoot", r, err)
	}
}

// A listener in another root directory hands its socket to a child and exits; its
// pid, which the socket's credentials keep, goes to a process of this root
// directory. The root read at that pid is not the listener's: with a pidfd it is
// Exited; an older kernel's judgement by the pid alone takes it for this root (the
// race the pidfd closes).
func TestListenerWhosePidWasReused(t *testing.T) {
	sock, pid := sockpeertest.Orphaned(t, t.TempDir(), "planted.sock")
	sockpeertest.TakePid(t, pid)
	l := ask(t, sock, nil)
	if strconv.Itoa(int(l.Pid)) != pid {
		t.Fatalf("the socket names pid %d, want the exited listener's %s", l.Pid, pid)
	}
	if r, err := l.Root("/proc"); r != Exited || err != nil {
		t.Errorf("a listener whose pid a process of this root took: Root = %v, %v; want Exited", r, err)
	}
	if !l.Exited() {
		t.Error("a listener whose pid a process of this root took: not Exited")
	}
	if r, err := ask(t, sock, olderKernel).Root("/proc"); r != SameRoot || err != nil {
		t.Errorf("the same, judged by the pid alone (an older kernel): Root = %v, %v; want SameRoot (the pid's new process)", r, err)
	}
}
