package sandboxinit

import (
	"io"
	"os"
	"syscall"
	"time"

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
// the init's own as stdout and stderr, copied to the container's (outCopy): the
// command never holds the engine's pipes, so a descriptor of them that it hands to a
// process outside the container (over a Unix socket the project shows) cannot keep
// the engine's output stream open once the init exited. dockerd 26 waits for that
// stream's end before it reports the container's exit, removes it or answers an
// inspect, and then leaves its shim running. With one stream (wire.Hello.OneStream)
// stdout and stderr are one pipe, copied to stdout.
type pipeIO struct {
	r, w *os.File
	out  *outCopy // the command's stdout and stderr
}

func newPipeIO(stdout, stderr io.Writer, one bool) (*pipeIO, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	out, err := newOutCopy(stdout, stderr, one)
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	return &pipeIO{r: r, w: w, out: out}, nil
}

// files are blocking descriptors (Fd), as a command expects its stdio to be.
func (p *pipeIO) files() []uintptr {
	stdout, stderr := p.out.stdio()
	return []uintptr{p.r.Fd(), stdout, stderr}
}
func (p *pipeIO) sys() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
func (p *pipeIO) started() {
	p.r.Close()
	p.out.started()
}
func (p *pipeIO) write(b []byte)           { _, _ = p.w.Write(b) }
func (p *pipeIO) closeInput()              { p.w.Close() }
func (p *pipeIO) resize(rows, cols uint16) {}
func (p *pipeIO) finish()                  { p.out.finish() }

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
