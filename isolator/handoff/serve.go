package handoff

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Job is one request as the program serves it.
type Job struct {
	Request
	// Ctx ends when the caller closes the control pipe or is gone.
	Ctx context.Context
	// Signals are the caller's forwarded signals.
	Signals <-chan Signal
	// Freezer freezes the command while devsandbox is stopped (JobStop, JobGo).
	Freezer *Freezer
	// Phase, under Request.Debug, records a launch phase for the caller's timings
	// (nil otherwise).
	Phase func(name string)
	// Stdio are the program's standard streams, the caller's own.
	Stdio isolator.Stdio
}

// Files returns the request's own descriptors (FirstExtraFD on), n of them.
func (c *Job) Files(n int) []*os.File {
	fs := make([]*os.File, 0, n)
	for i := 0; i < n; i++ {
		fs = append(fs, os.NewFile(uintptr(FirstExtraFD+i), fmt.Sprintf("fd %d", FirstExtraFD+i)))
	}
	return fs
}

// Handler answers one request.
type Handler func(c *Job) Result

// HeadStart is a program's head start on a request: it is called with the request's
// operation, settings and Plan (undecoded JSON, possibly empty) as soon as the request
// line is read, before the Plan is decoded and the Handler runs. It may start work that
// only looks (asking a daemon for its state), in the background, and returns as soon
// as that work is started (the Plan's decoding waits for it); the Handler decides
// whether that work is its request's (the same settings).
type HeadStart func(op string, settings, plan json.RawMessage)

// Serve answers the one request read from ControlFD with h and writes the Result to
// ResultFD. It returns the program's exit status. The Plan's HostEnv is rebuilt from
// the environment, by the names the Plan gives.
func Serve(h Handler, stdin *os.File, stdout, stderr io.Writer) int {
	return ServeEarly(h, nil, stdin, stdout, stderr)
}

// ServeEarly is Serve with a head start (early; nil: none), called once the request
// line is read.
func ServeEarly(h Handler, early HeadStart, stdin *os.File, stdout, stderr io.Writer) int {
	prog := filepath.Base(os.Args[0])
	// Signals sent to the process group (a terminal's ^C) reach the caller too, which
	// forwards them: they are caught here so that each arrives once. The runtime's
	// signal handling starts with the first subscription (most of a millisecond
	// here): it starts now, beside the wait for the request and its decoding, and is
	// in place before the request is served. The job-control signals too: the caller
	// asks for the stop (JobStop) once, and waits for it; a default stop here, on a
	// terminal's Ctrl-Z, would come before the command is frozen.
	direct := make(chan os.Signal, 8)
	caught := make(chan struct{})
	go func() {
		signal.Notify(direct, isolator.ForwardedSignals...)
		signal.Notify(direct, isolator.JobSignals...)
		close(caught)
		for range direct {
		}
	}()
	// Nothing the program starts (podman's service, a container) may hold these.
	syscall.CloseOnExec(ControlFD)
	syscall.CloseOnExec(ResultFD)
	ctrl := os.NewFile(ControlFD, "control")
	res := os.NewFile(ResultFD, "result")
	if ctrl == nil || res == nil {
		fmt.Fprintf(stderr, "%s: run by devsandbox only (it needs its control descriptors)\n", prog)
		return 2
	}
	defer res.Close()
	r := bufio.NewReader(ctrl)
	line, err := r.ReadBytes('\n')
	if err == io.EOF && len(line) == 0 {
		return 0 // started ahead of a request that never came (Stub.Prestart)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: reading the request: %v\n", prog, err)
		return 2
	}
	c := &Job{Stdio: isolator.Stdio{In: backgroundStdin(stdin), Out: stdout, Err: stderr}, Freezer: &Freezer{}}
	if err := decodeRequest(line, early, &c.Request); err != nil {
		fmt.Fprintf(stderr, "%s: bad request: %v\n", prog, err)
		return 2
	}
	if p := c.Plan; p != nil {
		p.HostEnv = map[string]string{}
		for _, n := range p.HostEnvNames() {
			if v, ok := os.LookupEnv(n); ok {
				p.HostEnv[n] = v
			}
		}
	}

	// The control pipe's end means the caller is gone or done: cancel, with
	// ErrCallerGone. Until then its bytes are signals for the command, or Stop: the
	// caller's run was cancelled (StopNow: with isolator.ErrStopNow).
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan Signal, 16)
	go func() {
		defer cancel(ErrCallerGone)
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			switch Signal(b) {
			case Stop:
				cancel(context.Canceled)
				continue
			case StopNow:
				cancel(fmt.Errorf("the caller stopped the run at once: %w", isolator.ErrStopNow))
				continue
			case JobStop:
				c.Freezer.stop()
				continue
			case JobGo:
				c.Freezer.thaw()
				continue
			}
			select {
			case sigs <- Signal(b):
			default:
			}
		}
	}()
	c.Ctx, c.Signals = ctx, sigs
	<-caught

	var timing []string
	if c.Debug {
		last := time.Now()
		var mu sync.Mutex
		c.Phase = func(n string) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if n != "" {
				timing = append(timing, fmt.Sprintf("%s %.1fms", n, float64(now.Sub(last).Microseconds())/1000))
			}
			last = now
		}
	}
	out := h(c)
	if c.Phase != nil {
		c.Phase("") // under the lock: nothing writes timing any more
	}
	out.Timing = timing
	enc, _ := json.Marshal(out)
	if _, err := res.Write(enc); err != nil {
		fmt.Fprintf(stderr, "%s: writing the result: %v\n", prog, err)
		return 1
	}
	return 0
}

// decodeRequest decodes the request line into r. With a head start, the Plan is
// decoded after early saw the rest; without one, in one pass (the two passes take
// about a quarter of a millisecond more in a fresh process, for a docker run's Plan).
func decodeRequest(line []byte, early HeadStart, r *Request) error {
	if early == nil {
		return json.Unmarshal(line, r)
	}
	var head struct {
		Request
		Plan json.RawMessage `json:"plan,omitempty"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return err
	}
	early(head.Op, head.Settings, head.Plan)
	*r = head.Request
	if len(head.Plan) > 0 && string(head.Plan) != "null" {
		r.Plan = new(isolator.Plan)
		if err := json.Unmarshal(head.Plan, r.Plan); err != nil {
			return err
		}
	}
	return nil
}

// Backend is a backend a program serves.
type Backend interface {
	isolator.Isolator
	isolator.Diagnoser
}

// ServeIsolator is the Handler of a backend program: it answers the operations of
// Stub (run, render, check, diagnose) with the backend newBackend makes from the
// request, and the others with extra (nil: none).
func ServeIsolator(newBackend func(c *Job) (Backend, error), extra map[string]Handler) Handler {
	return func(c *Job) Result {
		var out Result
		if h, ok := extra[c.Op]; ok {
			return h(c)
		}
		b, err := newBackend(c)
		if err != nil {
			out.SetError(err)
			return out
		}
		switch c.Op {
		case OpRun, OpRender:
			if c.Plan == nil {
				out.Error = "no plan"
				return out
			}
			if c.Op == OpRender {
				rd, err := b.Render(c.Plan)
				if err == nil {
					out.Script = rd.Script()
				}
				out.SetError(err)
				return out
			}
			code, err := b.Run(c.Ctx, c.Plan, c.Stdio)
			out.Code = code
			out.SetError(err)
		case OpCheck:
			st := b.Check(c.Ctx)
			out.Status = &st
		case OpDiagnose:
			out.Checks = b.Diagnose(c.Ctx)
		default:
			out.Error = fmt.Sprintf("unknown operation %q", c.Op)
		}
		return out
	}
}
