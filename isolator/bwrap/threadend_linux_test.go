package bwrap

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEarlyStartOutlivesItsThread: bwrap's early start returns while bwrap runs
// (blocked until its release), so the goroutine that made it goes on, and may
// return locked to its thread, which the runtime then ends: an embedder's goroutine
// that locked the thread it landed on, or, as here, the starter itself. The kernel
// sends a child's parent-death signal when the THREAD that forked it ends, and
// bwrap's is SIGKILL: the sandbox must still run its command to its own end.
func TestEarlyStartOutlivesItsThread(t *testing.T) {
	bin := requireBwrap(t)
	h := newEarlyHost(t)
	r := h.record(bin, "/bin/sh", "-c", `cat /run/x; echo ran > /home/u/ran; exit 7`)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	e, tid := startOnEndingThread(t, func() (*earlyStart, error) {
		return startEarly(r, h.state, hostEnv, nil, [3]*os.File{nil, outW, outW})
	})
	outW.Close()
	defer func() {
		if e.proc != nil {
			_ = e.abandon()
		}
	}()
	threadGone(t, tid)
	// The thread that started bwrap is gone: a parent-death signal of its is sent.
	rerr := e.release(map[int][]byte{6: []byte("fresh\n"), 7: seccompProgram(t)})
	out, _ := io.ReadAll(outR)
	ws, err := e.proc.wait()
	e.proc = nil
	if ws.Signaled() {
		t.Fatalf("bwrap was killed (%v) once the thread that started it had ended (a goroutine returned locked to it): the sandbox's command was killed with it; output %q", unix.SignalName(ws.Signal()), out)
	}
	if rerr != nil {
		t.Fatalf("releasing bwrap: %v", rerr)
	}
	if err != nil || ws.ExitStatus() != 7 || string(out) != "fresh\n" {
		t.Fatalf("bwrap: %v, status %d, output %q; want the command's own exit status 7 and output %q", err, ws.ExitStatus(), out, "fresh\n")
	}
	if _, err := os.Stat(h.home + "/ran"); err != nil {
		t.Errorf("the command did not run to its end: %v", err)
	}
}

// TestChildOutlivesItsThread: a child startChild started with a parent-death signal
// (bwrap in Run and in its trials) outlives the thread it was started from.
func TestChildOutlivesItsThread(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	stdio, err := newChildStdio(inR, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, tid := startOnEndingThread(t, func() (*child, error) {
		return startChild("/bin/sh", []string{"sh", "-c", "read _; exit 7"}, nil, stdio, nil, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL})
	})
	inR.Close()
	threadGone(t, tid)
	// A SIGKILL sent as the thread ended ends the child whatever it reads now.
	if _, err := inW.WriteString("go\n"); err != nil && !errors.Is(err, syscall.EPIPE) {
		t.Fatal(err)
	}
	ws, err := c.wait()
	if ws.Signaled() {
		t.Fatalf("the child was killed (%v) once the thread that started it had ended (a goroutine returned locked to it)", unix.SignalName(ws.Signal()))
	}
	if err != nil || ws.ExitStatus() != 7 {
		t.Fatalf("the child: %v, status %d; want its own exit status 7", err, ws.ExitStatus())
	}
}

// startOnEndingThread calls start on a goroutine locked to a thread other than the
// main one (which the runtime never ends), which returns still locked, so that the
// runtime ends the thread; it returns start's result and the thread's id.
func startOnEndingThread[T any](t *testing.T, start func() (T, error)) (T, int) {
	t.Helper()
	type result struct {
		v   T
		tid int
		err error
	}
	for {
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime ends the thread
			if unix.Gettid() == unix.Getpid() {
				runtime.UnlockOSThread() // the main thread: wedged, not ended; another try
				ch <- result{tid: -1}
				return
			}
			v, err := start()
			ch <- result{v, unix.Gettid(), err}
		}()
		r := <-ch
		if r.tid == -1 {
			continue
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.v, r.tid
	}
}

// threadGone waits until the thread tid of this process has been reaped: the
// kernel has sent the parent-death signals of its children by then.
func threadGone(t *testing.T, tid int) {
	t.Helper()
	path := "/proc/self/task/" + strconv.Itoa(tid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d did not end within 10s of its goroutine's return locked to it: %v", tid, err)
		}
	}
}
