package tty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Relay connects a user's terminal to a pty master for the life of a
// sandboxed command: keystrokes go to the master, the command's output comes
// back, and window size changes follow the user's terminal.
//
// Lifecycle: call StartRelay before starting the command (so it starts with
// the right window size), start the command on the slave, close your own copy
// of the slave, wait until nothing that may write to the slave runs any more
// (the sandbox's last process is gone), then call Close. Close copies what the
// pty still holds and returns, also when a descriptor of the slave is still
// open elsewhere (passed out of the sandbox: see stopCopy).
//
// The relay keeps private descriptors: a duplicate of the master and, when in
// is a terminal, a non-blocking reopening of it. The caller's files are never
// closed, but must stay open until Close returns, and the master's file
// description is left non-blocking, as Open creates it.
type Relay struct {
	inFd   uintptr  // caller's in; used for the window size and the mode restore
	out    *os.File // caller's out
	master *os.File // private duplicate of the caller's master
	input  *os.File // what the input copy reads: private reopening of in, or in itself
	// ownsInput reports that input is private, so closing it interrupts a
	// pending read and Close can wait for the input copy to finish.
	ownsInput bool
	restore   func() error
	// guard follows the command's output when in and out are terminals, to put
	// back at Close what the command left in the user's terminal (guard.go);
	// answers counts the device attribute answers the input copy passed on.
	guard   *screenGuard
	answers da1Answers
	// filter removes from the command's output what would make the user's
	// terminal act beyond its screen (filter.go).
	filter *Filter

	winch     chan os.Signal // nil when in is not a terminal
	stopWinch chan struct{}
	winchDone chan struct{}
	outDone   chan struct{}
	inDone    chan struct{}
	winchErr  error // owned by the SIGWINCH goroutine until winchDone
	outErr    error // owned by the output goroutine until outDone
	inErr     error // owned by the input goroutine until inDone

	closeErr func() error
}

// StartRelay starts relaying between the user's terminal (in and out) and a
// pty master.
//
// When in is a terminal, StartRelay copies its window size to the master, puts
// it in raw mode (so Ctrl-C and other control characters reach the command's
// line discipline as bytes) and follows SIGWINCH until Close. When in is not a
// terminal, only the copying happens, and end of file on in is not passed on.
// The command's output passes through a Filter with opts, whether or not out is
// a terminal (it may be one further on).
// On error nothing is left running and the terminal mode is unchanged.
func StartRelay(in, out, master *os.File, opts FilterOptions) (*Relay, error) {
	inFd, err := fdOf(in)
	if err != nil {
		return nil, fmt.Errorf("starting relay: %w", err)
	}
	m, err := dupNonblock(master)
	if err != nil {
		return nil, fmt.Errorf("starting relay: %w", err)
	}
	r := &Relay{
		inFd:      inFd,
		out:       out,
		master:    m,
		input:     in,
		stopWinch: make(chan struct{}),
		winchDone: make(chan struct{}),
		outDone:   make(chan struct{}),
		inDone:    make(chan struct{}),
		filter:    NewFilter(opts),
	}
	if IsTerminal(inFd) {
		if err := r.setupTerminal(); err != nil {
			r.master.Close()
			return nil, fmt.Errorf("starting relay: %w", err)
		}
		r.winch = make(chan os.Signal, 1)
		signal.Notify(r.winch, syscall.SIGWINCH)
		go r.followSize()
		if outFd, err := fdOf(out); err == nil && IsTerminal(outFd) {
			r.guard = &screenGuard{}
		}
	}
	r.closeErr = sync.OnceValue(r.close)
	go r.copyOutput()
	go r.copyInput()
	return r, nil
}

func (r *Relay) setupTerminal() error {
	s, err := GetSize(r.inFd)
	if err != nil {
		return err
	}
	if err := r.setMasterSize(s); err != nil {
		return err
	}
	// A read of the caller's in cannot be interrupted: it is usually blocking,
	// and making it non-blocking would change the file description the user's
	// shell shares. A second, private open of the same terminal can be
	// non-blocking, which puts it under Go's poller, so closing it ends a
	// pending read and Close never waits on the user's next keystroke. If
	// /proc is unusable, fall back to reading in and not waiting for that copy.
	if f, err := reopen(r.inFd); err == nil {
		r.input, r.ownsInput = f, true
	}
	restore, err := MakeRaw(r.inFd)
	if err != nil {
		if r.ownsInput {
			r.input.Close()
		}
		return err
	}
	r.restore = restore
	return nil
}

// Close stops following window size changes, waits until all output the
// command wrote has been copied to out (the master reports EIO once every
// slave descriptor is closed), stops the input copy, restores the terminal
// mode, and returns the first errors met while relaying. The terminal mode is
// restored even when relaying failed. Close may be called more than once; later
// calls return the result of the first.
func (r *Relay) Close() error {
	return r.closeErr()
}

func (r *Relay) close() error {
	if r.winch != nil {
		signal.Stop(r.winch)
		close(r.stopWinch)
		<-r.winchDone
	}
	stopErr := stopCopy(r.master)
	<-r.outDone
	if r.ownsInput {
		r.input.Close()
	}
	// Closing the private master ends an input write blocked on a full master
	// buffer, and makes an input copy we do not wait for stop at its next read.
	r.master.Close()
	errs := []error{r.winchErr, r.outErr, stopErr}
	if r.ownsInput {
		<-r.inDone
		errs = append(errs, r.inErr)
	}
	if r.guard != nil {
		errs = append(errs, r.tidy())
	}
	if r.restore != nil {
		errs = append(errs, r.restore())
	}
	return errors.Join(errs...)
}

// settleTimeout bounds the wait for the terminal's answer to the settling query: a
// terminal that answers does so within a round trip; one that never answers costs
// this much at the end of a run that sent a query.
const settleTimeout = 500 * time.Millisecond

// tidy puts back what the command left in the user's terminal, still in raw mode
// and before the mode is restored: it turns off the modes the command left on, and,
// when the command sent a query, it asks the terminal a question of its own (primary
// device attributes, which every VT100-compatible terminal answers) and discards
// the input until that answer arrives, then flushes the terminal's input. A
// terminal answers in order, so the answers to the command's queries still on their
// way (a window title report the command set up, a cursor position) are discarded
// with it, and never read by the user's shell as typed input. Keys typed after the
// command ended and before the answer are discarded too.
func (r *Relay) tidy() error {
	if b := r.guard.resets(); len(b) > 0 {
		if _, err := r.out.Write(b); err != nil {
			return fmt.Errorf("resetting the terminal: %w", err)
		}
	}
	if !r.guard.queried {
		return nil
	}
	// Without a private reading of in (ownsInput), the input copy may still be
	// reading it: the answers that have arrived are flushed, no more.
	if !r.ownsInput {
		return flushInput(r.inFd)
	}
	if f, err := reopen(r.inFd); err == nil {
		defer f.Close()
		if _, err := r.out.Write([]byte("\x1b[c")); err != nil {
			return fmt.Errorf("settling the terminal: %w", err)
		}
		// The sentinel's answer is the last DA1 answer: those to the command's own
		// DA1 queries that the input copy did not pass on come first.
		need := max(0, r.guard.da1-r.answers.n) + 1
		_ = f.SetReadDeadline(time.Now().Add(settleTimeout))
		var d da1Answers
		buf := make([]byte, 512)
		for d.n < need {
			n, err := f.Read(buf)
			d.observe(buf[:n])
			if err != nil {
				break // the deadline: a terminal that does not answer
			}
		}
	}
	return flushInput(r.inFd)
}

// copyOutput copies master to out, through the filter and the screen guard, until
// the master reports that the slave is gone (copyFiltered).
func (r *Relay) copyOutput() {
	defer close(r.outDone)
	var observe func([]byte)
	if r.guard != nil {
		observe = r.guard.observe
	}
	r.outErr = copyFiltered(r.master, r.out, r.filter, observe)
}

// copyInput copies in to master until in ends, the relay closes, or the
// master stops accepting input.
func (r *Relay) copyInput() {
	defer close(r.inDone)
	buf := make([]byte, 4096)
	for {
		n, err := r.input.Read(buf)
		if n > 0 && r.guard != nil {
			r.answers.observe(buf[:n])
		}
		if n > 0 {
			if _, werr := r.master.Write(buf[:n]); werr != nil {
				r.inErr = ignoreEnd(werr, "writing input")
				return
			}
		}
		if err != nil {
			r.inErr = ignoreEnd(err, "reading input")
			return
		}
	}
}

// ignoreEnd drops the errors that mean the input copy is simply over: end of
// file, a hangup (EIO) and the relay closing its own files.
func ignoreEnd(err error, context string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return fmt.Errorf("%s: %w", context, err)
}

func (r *Relay) followSize() {
	defer close(r.winchDone)
	for {
		select {
		case <-r.stopWinch:
			return
		case <-r.winch:
			s, err := GetSize(r.inFd)
			if err == nil {
				err = r.setMasterSize(s)
			}
			if err != nil && r.winchErr == nil {
				r.winchErr = fmt.Errorf("following window size: %w", err)
			}
		}
	}
}

func (r *Relay) setMasterSize(s Size) error {
	return setSizeOf(r.master, s)
}

// fdOf returns f's descriptor without the side effect of (*os.File).Fd, which
// would put a pollable file into blocking mode.
func fdOf(f *os.File) (uintptr, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd uintptr
	if err := rc.Control(func(u uintptr) { fd = u }); err != nil {
		return 0, err
	}
	return fd, nil
}

// dupNonblock returns a private, pollable duplicate of master.
func dupNonblock(master *os.File) (*os.File, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("duplicating pty master: %w", derr)
	}
	// The duplicate shares the file description, so this also affects the
	// caller's master; Open already created it non-blocking.
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("making pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(nfd), master.Name()), nil
}

// reopen opens the file behind fd again, as a new, non-blocking, read-only
// file description that is never our controlling terminal.
func reopen(fd uintptr) (*os.File, error) {
	p := "/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10)
	nfd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reopening terminal: %w", err)
	}
	return os.NewFile(uintptr(nfd), p), nil
}
