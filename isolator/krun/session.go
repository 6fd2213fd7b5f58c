package krun

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/shim/wire"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// stream writes frames to the init's stdin (the attach connection's input).
type stream struct {
	w  io.Writer
	mu sync.Mutex // frames are written from several goroutines
}

func (s *stream) frame(typ byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteFrame(s.w, typ, p)
}

func (s *stream) hello(h *wire.Hello) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteHello(s.w, h)
}

// session relays one run's input, window sizes and signals to the init as frames. It
// never ends the stream while the command runs: end of stream tells the init that
// devsandbox is gone.
type session struct {
	st      *stream
	tty     bool
	report  *wire.Report
	restore func() error
	stop    chan struct{}
	wg      sync.WaitGroup

	// oomMessage is said on errOut after a command the memory limit killed.
	oomMessage string
	errOut     io.Writer
}

// startSession sends hello (with the window size) and starts relaying. signals, when
// set, replaces catching the forwarded signals here.
func startSession(st *stream, stdio isolator.Stdio, h *wire.Hello, signals <-chan handoff.Signal, report *wire.Report) (*session, error) {
	s := &session{st: st, tty: h.TTY, report: report, stop: make(chan struct{})}
	var inFd uintptr
	term := stdio.In != nil && tty.IsTerminal(stdio.In.Fd())
	if term {
		inFd = stdio.In.Fd()
	}
	if h.TTY && term {
		if sz, err := tty.GetSize(inFd); err == nil {
			h.Rows, h.Cols = sz.Rows, sz.Cols
		}
	}
	// The pipe to the attach connection is drained once the container starts; the
	// hello waits there until then.
	helloErr := make(chan error, 1)
	go func() { helloErr <- st.hello(h) }()
	if h.TTY && term {
		restore, err := tty.MakeRaw(inFd)
		if err != nil {
			return nil, fmt.Errorf("putting the terminal in raw mode: %w", err)
		}
		s.restore = restore
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer signal.Stop(winch)
			for {
				select {
				case <-s.stop:
					return
				case <-winch:
					if sz, err := tty.GetSize(inFd); err == nil {
						_ = st.frame(wire.FrameResize, wire.ResizePayload(sz.Rows, sz.Cols))
					}
				}
			}
		}()
	}
	go func() {
		if <-helloErr != nil {
			return
		}
		if stdio.In == nil {
			_ = st.frame(wire.FrameClose, nil)
			return
		}
		// Not waited for: a read of the user's stdin cannot be interrupted.
		s.pumpInput(stdio.In)
	}()
	sigs := signals
	if sigs == nil {
		own := make(chan os.Signal, 8)
		signal.Notify(own, isolator.ForwardedSignals...)
		conv := make(chan handoff.Signal, 8)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer signal.Stop(own)
			for {
				select {
				case <-s.stop:
					return
				case sig := <-own:
					if n, ok := sig.(syscall.Signal); ok {
						conv <- handoff.Signal(n)
					}
				}
			}
		}()
		sigs = conv
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			case n := <-sigs:
				_ = st.frame(wire.FrameSignal, []byte{byte(n)})
			}
		}
	}()
	return s, nil
}

func (s *session) pumpInput(in io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if s.st.frame(wire.FrameData, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			if !s.tty {
				_ = s.st.frame(wire.FrameClose, nil)
			}
			return
		}
	}
}

// close stops relaying and puts the terminal back.
func (s *session) close() {
	close(s.stop)
	s.wg.Wait()
	if s.restore != nil {
		_ = s.restore()
	}
}

// result turns the init's report and the exit status into Run's result.
func (s *session) result(code int) (int, error) {
	ready, failure := s.report.Result()
	switch {
	case ready:
		if code == 137 && s.report.OOM() && s.oomMessage != "" && s.errOut != nil {
			fmt.Fprintf(s.errOut, "devsandbox: %s\n", s.oomMessage)
		}
		return code, nil
	case failure != "":
		return 0, fmt.Errorf("%w: %s; the command did not run", isolator.ErrProtection, failure)
	}
	return 0, fmt.Errorf("%w: the container ended (status %d) before devsandbox-init reported; the command did not run. Its message, if any, is above; `devsandbox --dry-run` shows the container and `devsandbox doctor` checks podman", isolator.ErrProtection, code)
}
