package sandboxinit

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// commandIO is how the container init connects the command's stdio.
type commandIO interface {
	files() []uintptr // the command's descriptors 0, 1, 2
	sys() *syscall.SysProcAttr
	started()       // after the fork: close the child's ends
	write(b []byte) // input for the command
	closeInput()    // end of the command's input
	resize(rows, cols uint16)
	finish() // the command exited: pass on the rest of its output
}

// ptyIO runs the command on a pty of its own, relayed to the init's stdout, so job
// control works and the host's raw keystrokes (Ctrl-C) reach the line discipline.
type ptyIO struct {
	master, slave *os.File
	outDone       chan struct{}
}

func newPtyIO(rows, cols uint16) (*ptyIO, error) {
	master, slave, err := tty.Open()
	if err != nil {
		return nil, err
	}
	if rows > 0 && cols > 0 {
		_ = tty.SetSize(slave.Fd(), tty.Size{Rows: rows, Cols: cols})
	}
	p := &ptyIO{master: master, slave: slave, outDone: make(chan struct{})}
	go func() {
		_, _ = io.Copy(os.Stdout, master)
		close(p.outDone)
	}()
	return p, nil
}

func (p *ptyIO) files() []uintptr {
	fd := p.slave.Fd()
	return []uintptr{fd, fd, fd}
}

func (p *ptyIO) sys() *syscall.SysProcAttr {
	// A session of its own with the pty as controlling terminal: the command's
	// process group is in the foreground, so shells have job control.
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

func (p *ptyIO) started()       { p.slave.Close() }
func (p *ptyIO) write(b []byte) { _, _ = p.master.Write(b) }
func (p *ptyIO) closeInput()    {}
func (p *ptyIO) resize(rows, cols uint16) {
	if conn, err := p.master.SyscallConn(); err == nil {
		_ = conn.Control(func(fd uintptr) { _ = tty.SetSize(fd, tty.Size{Rows: rows, Cols: cols}) })
	}
}

// finish waits for the output to drain: the master reads EIO once every holder of the
// slave is gone. Processes the command left behind may hold it; they die with the init.
func (p *ptyIO) finish() {
	select {
	case <-p.outDone:
	case <-time.After(2 * time.Second):
	}
}

// pipeIO gives the command a pipe as stdin, fed from the host's frames, and pipes of
// the init's own as stdout and stderr, copied to the container's (outPipe): the
// command never holds the engine's pipes, so a descriptor of them that it hands to a
// process outside the container (over a Unix socket the project shows) cannot keep
// the engine's output stream open once the init exited. dockerd 26 waits for that
// stream's end before it reports the container's exit, removes it or answers an
// inspect, and then leaves its shim running.
type pipeIO struct {
	r, w *os.File
	out  [2]*outPipe // the command's stdout and stderr
}

func newPipeIO(stdout, stderr io.Writer) (*pipeIO, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &pipeIO{r: r, w: w}
	for i, dst := range []io.Writer{stdout, stderr} {
		if p.out[i], err = newOutPipe(dst); err != nil {
			p.r.Close()
			p.w.Close()
			if i > 0 {
				p.out[0].w.Close()
				p.out[0].finish()
			}
			return nil, err
		}
	}
	return p, nil
}

// files are blocking descriptors (Fd), as a command expects its stdio to be; the
// init's ends stay in the poller.
func (p *pipeIO) files() []uintptr {
	return []uintptr{p.r.Fd(), p.out[0].w.Fd(), p.out[1].w.Fd()}
}
func (p *pipeIO) sys() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
func (p *pipeIO) started() {
	p.r.Close()
	p.out[0].w.Close()
	p.out[1].w.Close()
}
func (p *pipeIO) write(b []byte)           { _, _ = p.w.Write(b) }
func (p *pipeIO) closeInput()              { p.w.Close() }
func (p *pipeIO) resize(rows, cols uint16) {}

// finish passes on what the command wrote before it exited (outPipe.finish); both
// streams at once, as neither waits for more.
func (p *pipeIO) finish() {
	p.out[0].stop()
	p.out[1].stop()
	p.out[0].finish()
	p.out[1].finish()
}

// outPipe is one of the command's output streams: a pipe whose write end is the
// command's and whose read end the init copies to dst until the pipe ends, or until
// finish once the command exited.
type outPipe struct {
	r, w *os.File
	dst  io.Writer
	done chan struct{}
}

func newOutPipe(dst io.Writer) (*outPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o := &outPipe{r: r, w: w, dst: dst, done: make(chan struct{})}
	go o.copy()
	return o, nil
}

func (o *outPipe) copy() {
	defer close(o.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := o.r.Read(buf)
		if n > 0 {
			if _, werr := o.dst.Write(buf[:n]); werr != nil {
				// Nobody reads the container's stream: the command's writes
				// fail (EPIPE) as they would on it.
				return
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			o.rest(buf)
			return
		}
		if err != nil {
			return
		}
	}
}

// rest copies what the pipe holds now, and nothing written after: the command
// exited, so what it wrote is in the pipe or was copied already (a write that does
// not fit returns only once the copy made room). A holder of the write end that
// outlives the command (its background process, a process outside the container
// it handed the descriptor to) writes nothing that is waited for.
func (o *outPipe) rest(buf []byte) {
	if err := o.r.SetReadDeadline(time.Time{}); err != nil {
		return
	}
	n := 0
	if rc, err := o.r.SyscallConn(); err == nil {
		// TIOCINQ is FIONREAD: the bytes a pipe holds.
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	}
	for n > 0 {
		k, err := o.r.Read(buf[:min(n, len(buf))])
		if k > 0 {
			if _, werr := o.dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		n -= k
	}
}

// stop ends the copy at what the pipe holds now (rest). Without another holder of the
// write end the copy has usually seen the pipe's end already.
func (o *outPipe) stop() { _ = o.r.SetReadDeadline(time.Now()) }

// finish waits for the copy to end, then closes the read end: a later write by a
// holder fails (EPIPE) instead of filling a pipe nobody reads.
func (o *outPipe) finish() {
	<-o.done
	o.r.Close()
}

// inheritIO is plain mode: the command gets the container's stdio; on a terminal
// (docker run -t) its process group becomes the foreground one.
type inheritIO struct{ term bool }

func newInheritIO() *inheritIO { return &inheritIO{term: tty.IsTerminal(0)} }

func (p *inheritIO) files() []uintptr { return []uintptr{0, 1, 2} }
func (p *inheritIO) sys() *syscall.SysProcAttr {
	if p.term {
		return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
func (p *inheritIO) started()                 {}
func (p *inheritIO) write([]byte)             {}
func (p *inheritIO) closeInput()              {}
func (p *inheritIO) resize(rows, cols uint16) {}
func (p *inheritIO) finish()                  {}
