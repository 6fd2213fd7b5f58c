package docker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/shim/wire"
)

// stream is the attached connection to the init: frames go out on conn, the init's
// multiplexed stdout and stderr come back on r.
type stream struct {
	conn net.Conn
	r    *bufio.Reader
	mu   sync.Mutex // frames are written from several goroutines
}

func (s *stream) frame(typ byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteFrame(s.conn, typ, p)
}

func (s *stream) hello(h *wire.Hello) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteHello(s.conn, h)
}

// session relays one run: the user's input, window size and signals to the init as
// frames, its output back. It never closes the connection for writing while the
// command runs: end of stream tells the init that devsandbox is gone.
type session struct {
	st     *stream
	stdio  isolator.Stdio
	tty    bool
	report *wire.Report
	// outDone is closed once the init's output has ended (it exited).
	outDone chan struct{}

	restore func() error
	stop    chan struct{}
	wg      sync.WaitGroup

	// oomMessage is said after a command the memory limit killed.
	oomMessage string
}

// startSession sends hello (after adding the window size) and starts relaying.
func startSession(st *stream, stdio isolator.Stdio, h *wire.Hello) (*session, error) {
	s := &session{st: st, stdio: stdio, tty: h.TTY, stop: make(chan struct{}), outDone: make(chan struct{})}
	s.report = wire.NewReport(stdio.Err)
	if h.Nonce != "" {
		s.report.ExpectOOM(h.Nonce)
	}
	var inFd uintptr
	term := stdio.In != nil && isTerminal(stdio.In.Fd())
	if term {
		inFd = stdio.In.Fd()
	}
	if h.TTY && term {
		if rows, cols, err := termSize(inFd); err == nil {
			h.Rows, h.Cols = rows, cols
		}
	}
	if err := st.hello(h); err != nil {
		return nil, fmt.Errorf("sending the session's secrets to the container: %w", err)
	}
	if h.TTY && term {
		restore, err := makeRaw(inFd)
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
					if rows, cols, err := termSize(inFd); err == nil {
						_ = st.frame(wire.FrameResize, wire.ResizePayload(rows, cols))
					}
				}
			}
		}()
	}
	go func() {
		out := stdio.Out
		if out == nil {
			out = io.Discard
		}
		_, _ = stdcopy.StdCopy(out, s.report, st.r)
		_ = s.report.Flush()
		close(s.outDone)
	}()
	if stdio.In == nil {
		_ = st.frame(wire.FrameClose, nil)
	} else {
		// Not waited for: a read of the user's stdin cannot be interrupted.
		go s.pumpInput(stdio.In)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, isolator.ForwardedSignals...)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer signal.Stop(sigs)
		for {
			select {
			case <-s.stop:
				return
			case sig := <-sigs:
				if n, ok := sig.(syscall.Signal); ok {
					_ = st.frame(wire.FrameSignal, []byte{byte(n)})
				}
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

// wait returns once the init's output ended (it exited), or after grace once exited
// is closed (the engine says the command ended, output may still be in flight).
func (s *session) wait(exited <-chan struct{}, grace time.Duration) {
	select {
	case <-s.outDone:
		return
	case <-exited:
	}
	select {
	case <-s.outDone:
	case <-time.After(grace):
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
		if code == 137 && s.report.OOM() && s.oomMessage != "" && s.stdio.Err != nil {
			fmt.Fprintf(s.stdio.Err, "devsandbox: %s\n", s.oomMessage)
		}
		return code, nil
	case failure != "":
		return 0, fmt.Errorf("%w: %s; the command did not run", isolator.ErrProtection, failure)
	}
	return 0, fmt.Errorf("%w: the container ended (status %d) before devsandbox-init reported; the command did not run. Its message, if any, is above; `devsandbox --dry-run` shows the container and `devsandbox doctor` checks the engine", isolator.ErrProtection, code)
}

// secretHello reads the secret values the Plan names, for the Hello frame.
func secretHello(p *isolator.Plan) (*wire.Hello, error) {
	h := &wire.Hello{TTY: p.TTY}
	if p.Limits.Memory > 0 {
		h.Nonce = wire.NewNonce()
	}
	for _, sec := range p.Secrets {
		var val []byte
		switch {
		case sec.FileSource != "":
			b, err := os.ReadFile(sec.FileSource)
			if err != nil {
				return nil, fmt.Errorf("%w: reading the secret file for %s: %v", isolator.ErrProtection, sec.Name, err)
			}
			val = b
		default:
			v, ok := p.HostEnv[sec.EnvSource]
			if !ok {
				return nil, fmt.Errorf("%w: secret %s: the host variable %s is not set", isolator.ErrProtection, sec.Name, sec.EnvSource)
			}
			val = []byte(v)
		}
		if sec.AsFile {
			if h.Files == nil {
				h.Files = map[string][]byte{}
			}
			h.Files[sec.Name] = val
		} else {
			if h.Env == nil {
				h.Env = map[string]string{}
			}
			h.Env[sec.Name] = string(val)
		}
	}
	return h, nil
}
