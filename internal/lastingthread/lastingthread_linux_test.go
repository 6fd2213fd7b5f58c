package lastingthread

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The main goroutine stays on the main thread (a lock in init holds through main,
// and TestMain runs on it): mainPath records what Run did there.
func init() { runtime.LockOSThread() }

var mainPath struct {
	tid, pid   int
	handedOver bool
}

func TestMain(m *testing.M) {
	Run(func() { mainPath.tid = unix.Gettid() })
	mainPath.pid, mainPath.handedOver = unix.Getpid(), work != nil
	os.Exit(m.Run())
}

// TestMainThreadRunsInPlace: on the main thread, f runs right there, and no lasting
// goroutine (a thread of its own) is started: the launcher pays nothing.
func TestMainThreadRunsInPlace(t *testing.T) {
	if mainPath.tid != mainPath.pid || mainPath.handedOver {
		t.Fatalf("Run from the main thread ran f on thread %d (the process is %d), handed over: %v; want it in place", mainPath.tid, mainPath.pid, mainPath.handedOver)
	}
}

// TestChildOutlivesEndedThread: a child started with a parent-death signal inside Run
// survives the end of the thread Run was called from (a goroutine that returns
// locked to its thread ends it); the control, started without Run, is killed by
// it, as the kernel sends the signal when the thread that forked the child ends.
func TestChildOutlivesEndedThread(t *testing.T) {
	for _, tc := range []struct {
		name    string
		through func(func())
		killed  bool
	}{
		{"control: forked on the ending thread", func(f func()) { f() }, true},
		{"Run", Run, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := childOfEndingThread(t, tc.through)
			switch {
			case tc.killed && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL):
				t.Fatalf("the child ended with %v; want killed by its parent-death signal SIGKILL (the kernel's behaviour this package works around)", ws)
			case !tc.killed && ws.Signaled():
				t.Fatalf("the child was killed (%s) once the thread Run was called from had ended: Run forked it from that thread", unix.SignalName(ws.Signal()))
			case !tc.killed && ws.ExitStatus() != 7:
				t.Fatalf("the child ended with %v; want its own exit status 7", ws)
			}
		})
	}
}

// childOfEndingThread starts, through through, `sh -c 'read _; exit 7'` with SIGKILL
// as its parent-death signal from a goroutine locked to a thread other than the main
// one, which returns locked (the runtime ends the thread); once the thread is gone,
// it feeds the child its line and returns how the child ended.
func childOfEndingThread(t *testing.T, through func(func())) syscall.WaitStatus {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	type started struct{ pid, tid int }
	var s started
	for {
		ch := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime ends the thread
			if unix.Gettid() == unix.Getpid() {
				runtime.UnlockOSThread() // the main thread is never ended: again
				ch <- started{tid: -1}
				return
			}
			pid := 0
			through(func() {
				pid, _, err = syscall.StartProcess("/bin/sh", []string{"sh", "-c", "read _; exit 7"}, &syscall.ProcAttr{
					Files: []uintptr{r.Fd(), 2, 2}, Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
			})
			ch <- started{pid, unix.Gettid()}
		}()
		if s = <-ch; s.tid != -1 {
			break
		}
	}
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Reaped once the kernel has sent its children's parent-death signals.
	task := "/proc/self/task/" + strconv.Itoa(s.tid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
			t.Fatalf("thread %d did not end within 10s of its goroutine's return locked to it", s.tid)
		}
	}
	// A SIGKILL sent as the thread ended ends the child whatever it reads now.
	if _, err := w.WriteString("go\n"); err != nil && !errors.Is(err, syscall.EPIPE) {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(s.pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			if err != nil {
				t.Fatal(err)
			}
			return ws
		}
	}
}

// TestRunPanicReachesTheCaller: f's panic on the lasting thread's goroutine is the
// caller's, and the lasting goroutine serves on.
func TestRunPanicReachesTheCaller(t *testing.T) {
	done := make(chan any)
	go func() {
		defer func() { done <- recover() }()
		Run(func() { panic("boom") })
	}()
	if p := <-done; p != "boom" {
		t.Fatalf("recovered %v, want boom", p)
	}
	ran := false
	Run(func() { ran = true })
	if !ran {
		t.Fatal("Run after a panic did not run f")
	}
}
