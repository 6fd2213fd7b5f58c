package bwrap

import (
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The readiness report's pidfd tells when the init has exited: not while it runs,
// and once it is gone (here a child of the test stands in for the init).
func TestReadinessGone(t *testing.T) {
	r, err := newReadyPair()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	init := exec.Command("sleep", "60")
	if err := init.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = init.Process.Kill(); _ = init.Wait() }()
	pidfd, err := unix.PidfdOpen(init.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Skipf("no pidfds here: %v", err)
	}
	oob := append(unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}), unix.UnixRights(pidfd)...)
	err = unix.Sendmsg(int(r.child.Fd()), []byte{'R'}, oob, nil, 0)
	unix.Close(pidfd)
	if err != nil {
		t.Fatal(err)
	}
	rd := r.wait(func(f *os.File) { f.Close() })
	if rd.pid != os.Getpid() || rd.pidfd == nil {
		t.Fatalf("readiness %+v: want pid %d and a pidfd", rd, os.Getpid())
	}
	if exited, err := pidfdExited(rd.pidfd.Fd()); exited || err != nil {
		t.Fatal("the init's pidfd says it exited while it runs")
	}
	// before and after (the session /tmp's removal in Run) run only once the init
	// has exited: before while the channel is still open, after once it is closed.
	ran := make(chan string, 2)
	var mu sync.Mutex
	var gone <-chan struct{}
	check := func(name string, closed bool) func() {
		return func() {
			mu.Lock()
			g := gone
			mu.Unlock()
			isClosed := false
			select {
			case <-g:
				isClosed = true
			default:
			}
			exited, err := pidfdExited(rd.pidfd.Fd())
			if g == nil || isClosed != closed || !exited || err != nil {
				name += " out of order"
			}
			ran <- name
		}
	}
	mu.Lock()
	gone = rd.gone(check("before", false), check("after", true))
	mu.Unlock()
	select {
	case r := <-ran:
		t.Fatalf("%s ran while the init runs", r)
	case <-gone:
		t.Fatal("gone while the init runs")
	default:
	}
	if err := init.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = init.Wait()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("not gone 10 s after the init exited")
	}
	for _, want := range []string{"before", "after"} {
		select {
		case r := <-ran:
			if r != want {
				t.Fatalf("ran %q, want %q: before runs once the init has exited and before the channel is closed, after once it is", r, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not run 10 s after the init exited", want)
		}
	}
}

// A report without a pidfd (a kernel without them) leaves the wait to bwrap's exit.
func TestReadinessWithoutPidfd(t *testing.T) {
	r, err := newReadyPair()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	if err := unix.Sendmsg(int(r.child.Fd()), []byte{'R'}, cred, nil, 0); err != nil {
		t.Fatal(err)
	}
	rd := r.wait(func(f *os.File) { f.Close() })
	if rd.pid != os.Getpid() || rd.pidfd != nil || rd.gone(func() { t.Error("before ran without a pidfd") }, nil) != nil {
		t.Fatalf("readiness %+v: want pid %d, no pidfd and no gone channel", rd, os.Getpid())
	}
}

// A pidfd that cannot tell (here a pipe outside the runtime's poller stands in for
// it) is not taken for the init's exit: the sandbox's cleanup then waits for
// bwrap's exit, not for nothing.
func TestReadinessCannotTell(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	f := os.NewFile(uintptr(p[0]), "not a pidfd")
	defer f.Close()
	if waitExited(f) {
		t.Fatal("a descriptor that cannot tell was taken for the init's exit")
	}
}
