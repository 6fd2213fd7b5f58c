package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Stream writes frames to the init's stdin (the attached connection's input).
type Stream struct {
	w  io.Writer
	mu sync.Mutex // frames are written from several goroutines
}

// NewStream returns the stream writing to w.
func NewStream(w io.Writer) *Stream { return &Stream{w: w} }

// Frame writes one frame.
func (s *Stream) Frame(typ byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteFrame(s.w, typ, p)
}

func (s *Stream) hello(h *wire.Hello) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteHello(s.w, h)
}

// NewReport reads the init's report from its stderr, passing the rest on to
// stdio.Err; it expects the out-of-memory report h's nonce authenticates, and the
// session's end its End does.
func NewReport(stdio isolator.Stdio, h *wire.Hello) *wire.Report {
	r := wire.NewReport(stdio.Err)
	if h.Nonce != "" {
		r.ExpectOOM(h.Nonce)
	}
	if h.End != "" {
		r.ExpectEnd(h.End)
	}
	return r
}

// SessionOptions say how a session relays.
type SessionOptions struct {
	// Signals are the signals to forward to the command (a helper program gets them
	// from devsandbox); nil forwards none: the session subscribes to no signal of
	// this process (SIGWINCH only, for a terminal it relays).
	Signals <-chan handoff.Signal
	// AsyncHello sends the hello without waiting: the stream drains only once the
	// container starts (a pipe to the attach connection).
	AsyncHello bool
	// Engine names what `devsandbox doctor` checks when the init never reported ("the
	// engine", "podman").
	Engine string
	// OOMMessage is said on stdio.Err after a command the memory limit killed.
	OOMMessage string
	// Masks are the layout's (Layout.Masks): a failure naming a mask is told which
	// setting made it.
	Masks map[string]string
	// Tidy is the writer the backend copies the command's output through
	// (TerminalOut); Close finishes it, when the user's terminal was relayed.
	Tidy *tty.Tidy
}

// TerminalOut returns the writer a backend copies the command's output to: stdio.Out
// (io.Discard when nil), through a tty.Tidy when the run is interactive on the
// user's terminal (stdin and stdout terminals), to give as SessionOptions.Tidy. The
// Tidy filters the output with opts (tty.Filter).
func TerminalOut(stdio isolator.Stdio, h *wire.Hello, opts tty.FilterOptions) (io.Writer, *tty.Tidy) {
	if stdio.Out == nil {
		return io.Discard, nil
	}
	f, ok := stdio.Out.(*os.File)
	if !h.TTY || stdio.In == nil || !ok || !tty.IsTerminal(stdio.In.Fd()) || !tty.IsTerminal(f.Fd()) {
		return stdio.Out, nil
	}
	t := tty.NewTidy(stdio.Out, opts)
	return t, t
}

// PlainOut filters the command's output where it reaches a host terminal that the
// run does not relay (stdin not a terminal, so no Tidy): out, the writer
// TerminalOut returned, when it is stdio.Out itself and a terminal; and the
// report's output (the command's stderr) when that is a terminal. Each gets a
// filter of its own: the streams are separate. Output to a file or a pipe is left
// as it is, byte for byte, and the command sees the same descriptors either way.
// It returns the writer to copy stdout to, and a function to call once the output
// has ended.
func PlainOut(out io.Writer, report *wire.Report, opts tty.FilterOptions) (io.Writer, func()) {
	var ws []*tty.Writer
	filter := func(w io.Writer) io.Writer {
		f, ok := w.(*os.File)
		if !ok || !tty.IsTerminal(f.Fd()) {
			return w
		}
		fw := tty.NewWriter(f, opts)
		ws = append(ws, fw)
		return fw
	}
	out = filter(out)
	report.Out = filter(report.Out)
	return out, func() {
		for _, w := range ws {
			_ = w.Flush()
		}
	}
}

// Session relays one run: the user's input, window sizes and signals to the init as
// frames. It never ends the stream while the command runs: end of stream tells the
// init that devsandbox is gone. The init's output is the backend's to relay (through
// the Report).
type Session struct {
	st      *Stream
	tty     bool
	report  *wire.Report
	o       SessionOptions
	errOut  io.Writer
	restore func() error
	inFd    uintptr // the user's terminal, when restore is set
	stop    chan struct{}
	wg      sync.WaitGroup
	// helloSent is closed once the hello is written (or failed): no frame may
	// precede it.
	helloSent chan struct{}
	// helloErr is why the hello could not be written because the stream had ended
	// (streamEnded); the init's report decides the run's result (Result).
	helloErr error
}

// StartSession sends hello (with the window size) and starts relaying.
func StartSession(st *Stream, stdio isolator.Stdio, h *wire.Hello, report *wire.Report, o SessionOptions) (*Session, error) {
	s := &Session{st: st, tty: h.TTY, report: report, o: o, errOut: stdio.Err, stop: make(chan struct{}), helloSent: make(chan struct{})}
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
	helloErr := make(chan error, 1)
	if o.AsyncHello {
		go func() {
			err := st.hello(h)
			close(s.helloSent)
			helloErr <- err
		}()
	} else if err := st.hello(h); err != nil && !streamEnded(err) {
		return nil, fmt.Errorf("sending the session's secrets to the container: %w", err)
	} else {
		// A stream that has ended (its other end is closed) is not a failure yet: the
		// init may have exited before it read the hello, having run its command
		// (wire.StartFirstArg: the hello carries nothing) or failed a check (it then
		// started nothing). The engine half-closes an ended exec's stream, but a relay
		// on the way may close it whole. Its report, read to the end, says which
		// (Result); what was written of the hello, the init can no longer read.
		s.helloErr = err
		close(s.helloSent)
		helloErr <- err
	}
	if h.TTY && term {
		restore, err := tty.MakeRaw(inFd)
		if err != nil {
			return nil, fmt.Errorf("putting the terminal in raw mode: %w", err)
		}
		s.restore, s.inFd = restore, inFd
		s.relayResizes(inFd)
	}
	go func() {
		if <-helloErr != nil {
			return
		}
		if stdio.In == nil {
			_ = st.Frame(wire.FrameClose, nil)
			return
		}
		// Not waited for: a read of the user's stdin cannot be interrupted.
		s.pumpInput(stdio.In)
	}()
	s.relaySignals()
	return s, nil
}

// relayResizes sends the terminal's window size whenever it changes.
func (s *Session) relayResizes(inFd uintptr) {
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
					_ = s.st.Frame(wire.FrameResize, wire.ResizePayload(sz.Rows, sz.Cols))
				}
			}
		}
	}()
}

// relaySignals forwards the signals to the command's process group.
func (s *Session) relaySignals() {
	sigs := s.o.Signals
	if sigs == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select { // no frame before the hello (AsyncHello); a signal waits in sigs
		case <-s.stop:
			return
		case <-s.helloSent:
		}
		for {
			select {
			case <-s.stop:
				return
			case n := <-sigs:
				_ = s.st.Frame(wire.FrameSignal, []byte{byte(n)})
			}
		}
	}()
}

func (s *Session) pumpInput(in io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if s.st.Frame(wire.FrameData, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			if !s.tty {
				_ = s.st.Frame(wire.FrameClose, nil)
			}
			return
		}
	}
}

// Close stops relaying and puts the terminal back.
func (s *Session) Close() {
	close(s.stop)
	s.wg.Wait()
	if s.restore != nil {
		if s.o.Tidy != nil {
			_ = s.o.Tidy.Finish(s.inFd) // still raw: no echo of what it discards
		}
		_ = s.restore()
	}
}

// Result turns the init's report and the exit status into Run's result.
func (s *Session) Result(code int) (int, error) {
	ready, failure := s.report.Result()
	switch {
	case ready:
		if code == 137 && s.report.OOM() && s.o.OOMMessage != "" && s.errOut != nil {
			fmt.Fprintf(s.errOut, "devsandbox: %s\n", s.o.OOMMessage)
		}
		return code, nil
	case failure != "":
		return 0, isolator.WithGuess(fmt.Errorf("%w: %s; the command did not run", isolator.ErrProtection, failure), maskHint(failure, s.o.Masks))
	case s.helloErr != nil:
		return 0, fmt.Errorf("sending the session's secrets to the container: %w; the init's stream ended (status %d) before it reported", s.helloErr, code)
	}
	return 0, isolator.WithGuess(fmt.Errorf("%w: the container ended (status %d) before devsandbox-init reported; the command did not run. Its message, if any, is above", isolator.ErrProtection, code),
		"; `devsandbox --dry-run` shows the container and `devsandbox doctor` checks "+s.o.Engine)
}

// streamEnded reports whether err, from a write to the init's stream, says the
// stream's other end is closed: nothing written will be read.
func streamEnded(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// maskHint names the setting behind the mask an init's failure names ("mask PATH is
// not …"), and the ways on: "" when it names none of masks.
func maskHint(failure string, masks map[string]string) string {
	for p, why := range masks {
		if !strings.HasPrefix(failure, "mask "+p+" ") {
			continue
		}
		if why == "" {
			why = "devsandbox"
		}
		return fmt.Sprintf(". %s is hidden by %s, and the mask did not read as empty and read-only, so the run stopped rather than show it: `devsandbox --dry-run` shows the mount; check that you can list %s on the host (its owner needs read and search permission), or use --isolator=bwrap, whose masks do not depend on a container runtime", p, why, p)
	}
	return ""
}

// DefaultStopGrace is how long a command has between SIGTERM and the kill once its
// run's context ended, when the backend sets none (bwrap's default too).
const DefaultStopGrace = 10 * time.Second

// StopOnCancel makes the end of ctx stop the command as bwrap's Run does: SIGTERM
// to its process group (a frame to the init), then, if the session is still on
// after grace (0: DefaultStopGrace), late (a warning; may be nil) and end, which ends
// the init's stream: the init then kills everything the command left. A context that
// ended because the caller is gone (handoff.ErrCallerGone: nobody waits for the
// command), or with a cause wrapping isolator.ErrStopNow (the command is not asked),
// calls end at once. The returned function releases the arrangement; call
// it once the run is over.
func (s *Session) StopOnCancel(ctx context.Context, grace time.Duration, end, late func()) (release func()) {
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
			return
		case <-s.helloSent: // the init reads the hello first
		}
		if errors.Is(context.Cause(ctx), handoff.ErrCallerGone) || isolator.StopsNow(ctx) {
			end()
			return
		}
		_ = s.st.Frame(wire.FrameSignal, []byte{byte(syscall.SIGTERM)})
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			if late != nil {
				late()
			}
			end()
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}
