package tty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Output gives a command an output stream that is a terminal without handing it
// the user's terminal: a pty of its own, whose slave is the command's descriptor
// and whose master is copied through a Filter to the user's terminal. The command
// sees a terminal (isatty, the user's window size: it keeps its colours and its
// layout) and reaches nothing of the user's: no ioctl on it (its modes, its window
// size), no read of what the user types, no sequence the filter removes. For a run
// whose input is not the user's terminal; an interactive one has a Relay.
//
// The slave is nobody's controlling terminal, and its output processing is off:
// the bytes pass as the command wrote them, and the user's terminal processes them
// once (ONLCR), as without the pty. The slave's window size follows the user's
// terminal (SIGWINCH) until Close.
//
// Nothing ever arrives on the slave's input, so it is for writing only: the slave
// is open write-only and its mode is 0200, so that a program reading keys from it
// (a pager, which reads its stderr or the terminal ttyname names when it has no
// /dev/tty) fails at once instead of waiting forever. Its owner can give itself
// read permission back (fchmod); a read then waits, and still gets nothing.
//
// Lifecycle: StartOutput before starting the command, give it the slave, close
// your copy of the slave, wait until nothing that may write to the slave runs
// any more (the sandbox's last process is gone), then Close, which copies what
// the pty still holds and returns, also when a descriptor of the slave is still
// open elsewhere (the command may have passed it out of the sandbox, to a
// process that never closes it).
type Output struct {
	out, master *os.File
	outFd       uintptr
	filter      *Filter

	winch     chan os.Signal
	stopWinch chan struct{}
	winchDone chan struct{}
	outDone   chan struct{}
	winchErr  error // owned by the SIGWINCH goroutine until winchDone
	outErr    error // owned by the output goroutine until outDone

	closeErr func() error
}

// StartOutput allocates the pty for out, a terminal, and starts copying its master
// to out through a Filter with opts. It returns the slave, for the command. On
// error nothing is left running or open.
func StartOutput(out *os.File, opts FilterOptions) (slave *os.File, o *Output, err error) {
	if slave, o, err = OpenOutput(out); err != nil {
		return nil, nil, err
	}
	if err := o.Start(opts); err != nil {
		slave.Close()
		return nil, nil, err
	}
	return slave, o, nil
}

// OpenOutput allocates the pty for out, a terminal, as StartOutput does, and
// starts nothing: for a command started before the filter's options are known
// (an early start, which runs nothing of the command before its release). Start
// starts the copy and the following of the window size; Close discards an Output
// never started (its master closed: what the slave's holders wrote is dropped, a
// later write fails). On error nothing is left open.
func OpenOutput(out *os.File) (slave *os.File, o *Output, err error) {
	outFd, err := fdOf(out)
	if err != nil {
		return nil, nil, err
	}
	master, slave, err := openPTY(unix.O_WRONLY)
	if err != nil {
		return nil, nil, err
	}
	o = &Output{out: out, master: master, outFd: outFd,
		stopWinch: make(chan struct{}), winchDone: make(chan struct{}), outDone: make(chan struct{})}
	if err := o.setup(slave.Fd()); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	o.closeErr = sync.OnceValue(o.close)
	return slave, o, nil
}

// Start starts copying the pty to out through a Filter with opts, and following
// out's window size, which it first gives the pty again (it may have changed since
// OpenOutput). Once only, before Close; on error the Output is as before, for Close.
func (o *Output) Start(opts FilterOptions) error {
	o.winch = make(chan os.Signal, 1)
	signal.Notify(o.winch, syscall.SIGWINCH)
	s, err := GetSize(o.outFd)
	if err == nil {
		err = setSizeOf(o.master, s)
	}
	if err != nil {
		signal.Stop(o.winch)
		o.winch = nil
		return fmt.Errorf("giving the command's terminal your window size: %w", err)
	}
	o.filter = NewFilter(opts)
	go o.followSize()
	go func() {
		defer close(o.outDone)
		o.outErr = copyFiltered(o.master, o.out, o.filter, nil)
	}()
	return nil
}

// setup makes the slave write-only for everyone (mode 0200: its descriptors cannot
// be reopened for reading) and gives it the user's terminal's modes without output
// processing, and its window size.
func (o *Output) setup(slaveFd uintptr) error {
	tio, err := unix.IoctlGetTermios(int(o.outFd), ioctlGetTermios)
	if err != nil {
		return fmt.Errorf("getting the terminal's mode: %w", err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.Fchmod(int(slaveFd), 0o200); err != nil {
		return fmt.Errorf("making the pty write-only: %w", err)
	}
	if err := unix.IoctlSetTermios(int(slaveFd), ioctlSetTermios, tio); err != nil {
		return fmt.Errorf("setting the pty's mode: %w", err)
	}
	s, err := GetSize(o.outFd)
	if err != nil {
		return err
	}
	return SetSize(slaveFd, s)
}

// Close stops following the window size, copies what the pty still holds without
// waiting for every descriptor of the slave to be closed (see stopCopy), and
// returns the first errors met. Later calls return the first's result.
func (o *Output) Close() error {
	return o.closeErr()
}

func (o *Output) close() error {
	if o.winch == nil { // never started
		return o.master.Close()
	}
	signal.Stop(o.winch)
	close(o.stopWinch)
	<-o.winchDone
	stopErr := stopCopy(o.master)
	<-o.outDone
	o.master.Close()
	return errors.Join(o.winchErr, o.outErr, stopErr)
}

func (o *Output) followSize() {
	defer close(o.winchDone)
	for {
		select {
		case <-o.stopWinch:
			return
		case <-o.winch:
			s, err := GetSize(o.outFd)
			if err == nil {
				err = setSizeOf(o.master, s)
			}
			if err != nil && o.winchErr == nil {
				o.winchErr = fmt.Errorf("following window size: %w", err)
			}
		}
	}
}

// setSizeOf sets the window size of the pty behind master without taking it out of
// the poller.
func setSizeOf(master *os.File, s Size) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = SetSize(fd, s) }); err != nil {
		return err
	}
	return serr
}

// stopCopy ends copyFiltered's copy of master once what the pty holds is read,
// for a caller that knows nothing writes to the slave any more: the sandbox's
// processes are all gone. Waiting for every descriptor of the slave to be closed
// (the master's EIO) is not enough: the command can pass its descriptor to a
// process outside the sandbox (SCM_RIGHTS to any Unix socket it reaches: a
// listener that has not accepted holds it in its queue), and the copy, and with
// it the run, would never end. It makes the copy's blocked read return
// (os.ErrDeadlineExceeded), after which copyFiltered reads without waiting until
// the pty is empty (readNow).
func stopCopy(master *os.File) error {
	if err := master.SetReadDeadline(time.Now()); err != nil {
		return fmt.Errorf("ending the copy of the command's output: %w", err)
	}
	return nil
}

// readNow reads what the pty behind master holds without waiting (its descriptor
// is non-blocking): io.EOF once it is empty or every slave is closed. A read of an
// empty pty master first waits for the kernel's pending input work (n_tty_read's
// flush), so what a process wrote before it exited is there.
func readNow(master *os.File, buf []byte) (int, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Control(func(fd uintptr) { n, rerr = unix.Read(int(fd), buf) }); err != nil {
		return 0, err
	}
	switch {
	case rerr == nil && n > 0:
		return n, nil
	case rerr == nil, errors.Is(rerr, unix.EAGAIN), errors.Is(rerr, unix.EIO):
		return 0, io.EOF
	}
	return 0, rerr
}

// copyFiltered copies master to out through f until the master reports that every
// descriptor of the slave is closed, or, after stopCopy, until the pty is empty,
// calling observe (when set) with what passed. When out fails it keeps draining
// the master, so the command is never blocked on a full pty and the end is still
// seen.
func copyFiltered(master *os.File, out io.Writer, f *Filter, observe func([]byte)) error {
	buf := make([]byte, 32*1024)
	fbuf := make([]byte, 0, 32*1024)
	var werr error
	for {
		n, err := master.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			n, err = readNow(master, buf)
		}
		fbuf = f.Append(fbuf[:0], buf[:n])
		if err != nil {
			fbuf = f.Flush(fbuf)
		}
		if len(fbuf) > 0 && observe != nil {
			observe(fbuf)
		}
		if len(fbuf) > 0 && werr == nil {
			if _, werr = out.Write(fbuf); werr != nil {
				werr = fmt.Errorf("writing command output: %w", werr)
			}
		}
		if err != nil {
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
				err = fmt.Errorf("reading command output: %w", err)
			} else {
				err = nil
			}
			return errors.Join(werr, err)
		}
	}
}
