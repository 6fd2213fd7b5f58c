package helper

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Backend is what the helper serves: the krun isolator.
type Backend interface {
	isolator.Isolator
	isolator.Diagnoser
}

// NewBackend makes the backend for one request. signals carries what devsandbox
// forwards; phase, when set, records launch phases.
type NewBackend func(s Settings, signals <-chan Signal, phase func(string)) Backend

// Control and result descriptors of the helper (see the package doc).
const (
	ControlFD = 3
	ResultFD  = 4
)

// Serve answers one request read from ControlFD and writes the Result to ResultFD. It
// returns the helper's exit status.
func Serve(newBackend NewBackend, stdin *os.File, stdout, stderr io.Writer) int {
	// Nothing the helper starts (podman's service) may hold these.
	syscall.CloseOnExec(ControlFD)
	syscall.CloseOnExec(ResultFD)
	ctrl := os.NewFile(ControlFD, "control")
	res := os.NewFile(ResultFD, "result")
	if ctrl == nil || res == nil {
		fmt.Fprintf(stderr, "%s: run by devsandbox only (it needs its control descriptors)\n", Program)
		return 2
	}
	defer res.Close()
	r := bufio.NewReader(ctrl)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(stderr, "%s: reading the request: %v\n", Program, err)
		return 2
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintf(stderr, "%s: bad request: %v\n", Program, err)
		return 2
	}
	if req.Plan != nil {
		req.Plan.HostEnv = map[string]string{}
		for _, n := range hostEnvNames(req.Plan) {
			if v, ok := os.LookupEnv(n); ok {
				req.Plan.HostEnv[n] = v
			}
		}
	}

	// The control pipe's end means devsandbox is gone: cancel, which takes the
	// container down. Until then its bytes are signals for the command.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan Signal, 16)
	go func() {
		defer cancel()
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			select {
			case sigs <- Signal(b):
			default:
			}
		}
	}()
	// Signals sent to the process group (a terminal's ^C) reach devsandbox too, which
	// forwards them: they are caught here so that each arrives once.
	direct := make(chan os.Signal, 8)
	signal.Notify(direct, forwarded...)
	go func() {
		for range direct {
		}
	}()

	var timing []string
	var phase func(string)
	if req.Debug {
		last := time.Now()
		var mu sync.Mutex
		phase = func(n string) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if n != "" {
				timing = append(timing, fmt.Sprintf("%s %.1fms", n, float64(now.Sub(last).Microseconds())/1000))
			}
			last = now
		}
	}
	b := newBackend(req.Settings, sigs, phase)
	var out Result
	switch req.Op {
	case OpRun:
		if req.Plan == nil {
			out.Error = "no plan"
			break
		}
		code, err := b.Run(ctx, req.Plan, isolator.Stdio{In: stdin, Out: stdout, Err: stderr})
		out.Code = code
		out.Error, out.Class = errorOf(err)
	case OpRender:
		if req.Plan == nil {
			out.Error = "no plan"
			break
		}
		rd, err := b.Render(req.Plan)
		if err == nil {
			out.Script = rd.Script()
		}
		out.Error, out.Class = errorOf(err)
	case OpCheck:
		st := b.Check(ctx)
		out.Status = &st
	case OpDiagnose:
		out.Checks = b.Diagnose(ctx)
	default:
		out.Error = fmt.Sprintf("unknown operation %q", req.Op)
	}
	if phase != nil {
		phase("") // under the lock: nothing writes timing any more
	}
	out.Timing = timing
	enc, _ := json.Marshal(out)
	if _, err := res.Write(enc); err != nil {
		fmt.Fprintf(stderr, "%s: writing the result: %v\n", Program, err)
		return 1
	}
	return 0
}
