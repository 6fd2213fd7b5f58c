package sandboxinit

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The stream a session init hands over with its registration line reaches the keeper
// as a descriptor of the same pipe; a connection that passes none yields -1.
func TestReadProxySocketReceivesStream(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range pair {
		f := os.NewFile(uintptr(fd), "pair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c.(*net.UnixConn)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, _, err := conns[0].WriteMsgUnix([]byte("proxy-s1.sock\n"), unix.UnixRights(int(r.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	name, stream, err := readProxySocket(conns[1])
	if err != nil || name != "proxy-s1.sock" || stream < 0 {
		t.Fatalf("readProxySocket: %q, %d, %v", name, stream, err)
	}
	got := os.NewFile(uintptr(stream), "stream")
	defer got.Close()
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := got.Read(b[:]); n != 1 || b[0] != 'x' {
		t.Fatalf("the received descriptor is not the pipe: %d %v", n, err)
	}
	if fl, err := unix.FcntlInt(got.Fd(), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("the received descriptor is not close-on-exec (%#x, %v): the keeper's children would hold it", fl, err)
	}
}

// watchSetup starts a stopped process (a session init its command stopped) and a pipe
// standing for the host's stream; it returns the process, its pidfd and the pipe.
func watchSetup(t *testing.T) (*exec.Cmd, int, *os.File, *os.File) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Skipf("no pidfd: %v", err)
	}
	t.Cleanup(func() { unix.Close(pidfd) })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return cmd, pidfd, r, w
}

// Once the host's end of the stream is closed, a session that does not end within
// hostGoneGrace has its (stopped) init killed.
func TestWatchHostKillsStoppedInit(t *testing.T) {
	cmd, pidfd, r, w := watchSetup(t)
	stream, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ended, done := make(chan struct{}), make(chan struct{})
	go func() { watchHost(stream, cmd.Process.Pid, pidfd, ended); close(done) }()
	start := time.Now()
	w.Close() // the host is gone
	<-done
	// watchHost has returned: the SIGKILL, if any, was sent. Wait for the death it
	// causes, bounded, so that a watch that sent none fails here instead of at go
	// test's timeout (the stopped sleep never ends by itself).
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the stopped init was not killed: still there 30s after watchHost returned (%v after the host went)", time.Since(start))
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the stopped init was not killed: %v", err)
	}
	if d := time.Since(start); d < hostGoneGrace {
		t.Errorf("killed after %v, before the init's grace of %v", d, hostGoneGrace)
	}
	close(ended)
}

// A session that ends first is left alone, and the stream is closed.
func TestWatchHostSessionEnded(t *testing.T) {
	cmd, pidfd, r, w := watchSetup(t)
	defer w.Close()
	stream, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ended, done := make(chan struct{}), make(chan struct{})
	go func() { watchHost(stream, cmd.Process.Pid, pidfd, ended); close(done) }()
	close(ended)
	<-done
	if _, err := unix.FcntlInt(uintptr(stream), unix.F_GETFD, 0); err == nil {
		t.Errorf("the stream is still open")
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		t.Errorf("the init was signalled: %v", err)
	}
}
