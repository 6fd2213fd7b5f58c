package sandboxinit

import (
	"errors"
	"io"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// outCopy copies the command's output streams (stdout, stderr), pipes whose write
// ends are the command's, to the init's own (the container's), until each pipe ends
// or finish is called once the command exited. With one stream (newOutCopy's one)
// there is a single pipe, the command's stdout and stderr both, copied to stdout:
// the bytes keep the command's order whatever the engine does with two streams.
//
// One loop on a thread of its own waits for both pipes in poll(2) and copies from
// whichever has data as soon as it has: a line the command writes on stderr before a
// burst on stdout is passed on before it, as when the command held the engine's
// pipes itself. (Two goroutines, one per pipe, woke late enough under Go's scheduler
// that 64 KiB of stdout written after a stderr line overtook it, 2 runs in 20.)
type outCopy struct {
	r, w [2]int // the pipes' read ends (the loop's) and write ends (the command's); -1: none (one stream)
	dst  [2]io.Writer
	// stop's write end is closed by finish: the command exited.
	stopR, stopW int
	done         chan struct{}
}

func newOutCopy(stdout, stderr io.Writer, one bool) (*outCopy, error) {
	o := &outCopy{dst: [2]io.Writer{stdout, stderr}, r: [2]int{-1, -1}, w: [2]int{-1, -1}, stopR: -1, stopW: -1, done: make(chan struct{})}
	fds := [3][2]int{{-1, -1}, {-1, -1}, {-1, -1}}
	for i := range fds {
		if i == 1 && one {
			continue
		}
		if err := unix.Pipe2(fds[i][:], unix.O_CLOEXEC); err != nil {
			for _, p := range fds[:i] {
				closeFD(p[0])
				closeFD(p[1])
			}
			return nil, err
		}
	}
	o.r[0], o.w[0] = fds[0][0], fds[0][1]
	o.r[1], o.w[1] = fds[1][0], fds[1][1]
	for _, fd := range o.r {
		if fd < 0 {
			continue
		}
		// A page each: the command runs ahead of the container's streams by no more
		// than that, as when it wrote to them itself (a write blocked on a full
		// stdout held its next line on stderr back). Best effort.
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, os.Getpagesize())
	}
	o.stopR, o.stopW = fds[2][0], fds[2][1]
	// Polling before the command starts: what it writes first is taken first.
	polling := make(chan struct{})
	go o.loop(polling)
	<-polling
	return o, nil
}

// stdio are the command's descriptors 1 and 2: with one stream, the one pipe's
// write end twice (the command's `2>&1`).
func (o *outCopy) stdio() (stdout, stderr uintptr) {
	if o.w[1] < 0 {
		return uintptr(o.w[0]), uintptr(o.w[0])
	}
	return uintptr(o.w[0]), uintptr(o.w[1])
}

// started closes the command's ends in the init, once the command has them.
func (o *outCopy) started() {
	for i, fd := range o.w {
		closeFD(fd)
		o.w[i] = -1
	}
}

// closeFD closes fd unless it is -1 (none).
func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// finish passes on what the pipes hold now, then closes them: the command exited, so
// what it wrote is in a pipe or was copied already (a write that does not fit
// returns only once the copy made room). A holder of a write end that outlives the
// command (its background process, a process outside the container it handed the
// descriptor to) writes nothing that is waited for, and once the read end is closed
// its writes fail (EPIPE) instead of filling a pipe nobody reads.
func (o *outCopy) finish() {
	if o.stopW >= 0 {
		unix.Close(o.stopW)
		o.stopW = -1
	}
	<-o.done
}

func (o *outCopy) loop(polling chan<- struct{}) {
	runtime.LockOSThread()
	defer close(o.done)
	defer func() {
		for _, fd := range append(o.r[:], o.stopR) {
			closeFD(fd)
		}
	}()
	buf := make([]byte, 64<<10) // more than a pipe holds: one read takes all it holds
	fds := []unix.PollFd{{Fd: int32(o.r[0]), Events: unix.POLLIN}, {Fd: int32(o.r[1]), Events: unix.POLLIN}, {Fd: int32(o.stopR), Events: unix.POLLIN}}
	failed := [2]bool{}
	last := -1 // the stream written last; with one stream always 0, so it never settles
	close(polling)
	for fds[0].Fd >= 0 || fds[1].Fd >= 0 {
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[2].Revents != 0 {
			// The command exited: what the pipes hold now, in the order of the
			// streams (poll cannot tell which was written first).
			for i := range 2 {
				if fds[i].Fd >= 0 && !failed[i] {
					o.rest(i, buf)
				}
			}
			return
		}
		for i := range 2 {
			if fds[i].Fd < 0 || fds[i].Revents == 0 {
				continue
			}
			n, err := unix.Read(o.r[i], buf)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			if n <= 0 {
				fds[i].Fd = -1 // its end: every holder of the write end closed it
				continue
			}
			if failed[i] {
				continue
			}
			if last == 1-i {
				// A switch of stream: once per switch, not per write (a burst on one
				// stream asks nothing, and an engine slow to take the other costs at
				// most one bound).
				o.settle(1 - i)
			}
			last = i
			if _, err := o.dst[i].Write(buf[:n]); err != nil {
				// Nobody reads the container's stream: the rest is dropped, so the
				// command's writes do not block.
				failed[i] = true
			}
		}
	}
}

// rest copies what pipe i holds now (FIONREAD), and nothing written after.
func (o *outCopy) rest(i int, buf []byte) {
	n, err := unix.IoctlGetInt(o.r[i], unix.TIOCINQ) // TIOCINQ is FIONREAD
	if err != nil {
		return
	}
	for n > 0 {
		k, _ := unix.Read(o.r[i], buf[:min(n, len(buf))])
		if k <= 0 {
			return
		}
		if _, err := o.dst[i].Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

// settle waits, briefly, until the engine has taken what the init wrote on its other
// stream (the container's pipe holds nothing), so that the engine, which copies its
// two pipes apart, does not pass on a line written later first: the command, writing
// to the engine's pipes itself, could not write again before its last write went in.
// Without a pipe (a test's writer), or after a second (an engine that stopped
// reading: the command's writes would block there as well), it returns. It asks
// every 100µs at first, then less often (up to every 10ms), so a slow engine costs
// no busy loop. (A 50ms bound was passed on a loaded machine: 1 run in 15 of
// TestPlainTerminalKeepsBehaviour on docker-remote saw stderr within stdout.)
func (o *outCopy) settle(i int) {
	f, ok := o.dst[i].(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	wait := 100 * time.Microsecond
	for deadline := time.Now().Add(settleBound); ; {
		n := 0
		var ierr error
		if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil || n == 0 {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// settleBound is how long settle waits at most for the engine to take a stream.
const settleBound = time.Second
