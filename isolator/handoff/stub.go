package handoff

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/isolator"
)

// Stub is a backend as devsandbox sees it when the backend lives in a program of its
// own: every method runs the program for one request.
type Stub struct {
	// Backend is the backend's name ("krun"), Program its program's file name,
	// installed next to devsandbox ("devsandbox-krun").
	Backend, Program string
	// Path is the program; "" means Program next to the running executable.
	Path string
	// Settings are the backend's settings, sent with every request.
	Settings any
	// Environ is the host environment the program runs with (config.Host.Vars); the
	// run's secret values are added to it by name.
	Environ map[string]string
	// Phase, when set, receives the program's launch phases (for --debug timings).
	Phase func(name string)
	// Early, when set, is the program Prestart started for the next Run.
	Early *Early
	// ForwardSignals: while a Run's program runs, this process catches
	// isolator.ForwardedSignals and passes each on to the command (the CLI). Off (a
	// library's default), Run subscribes to no signal; the caller stops the command
	// by ending Run's context.
	ForwardSignals bool
	// StopGrace is the time the program gives the command between SIGTERM and the
	// kill once Run's context ended (the backend's setting; 0: its default). Run
	// waits for the program that much longer than RunWaitDelay.
	StopGrace time.Duration
	// Place returns where the backend's sandbox places a Plan (ViewPlacement), from
	// the backend's settings; the backend's package sets it.
	Place func(p *isolator.Plan) (isolator.Placement, error)
}

// ViewPlacement implements isolator.Viewer with Place; a Stub without one fails
// (isolator.ViewOf: ErrUnavailable).
func (s *Stub) ViewPlacement(p *isolator.Plan) (isolator.Placement, error) {
	if s.Place == nil {
		return isolator.Placement{}, fmt.Errorf("%w: the %s isolator cannot say what its sandbox shows of the host, so a harness's file tools have no view of it", isolator.ErrUnavailable, s.Backend)
	}
	return s.Place(p)
}

// Early is a program started before its request was known (Prestart), with the
// environment and streams it was started with.
type Early struct {
	p     *Process
	env   []string
	stdio isolator.Stdio
}

// Prestart starts the program for a run that is to follow, so that its start overlaps
// the caller's planning; it returns nil when it could not (the run then starts it and
// says why). The environment is the Stub's: the Plan's host values are not known yet,
// and secret values reach the program only in its environment. Call uses it when its
// request's environment and streams are these, and Closes it otherwise.
func (s *Stub) Prestart(stdio isolator.Stdio) *Early {
	path := s.path()
	if path == "" || buildstamp.CheckSelf(s.Program, path) != nil {
		return nil
	}
	env := s.environ(nil)
	p, err := Launch(context.Background(), Program{Path: path, Env: env, Stdio: stdio})
	if err != nil {
		return nil
	}
	return &Early{p: p, env: env, stdio: stdio}
}

// Close ends the program unless a request was sent to it (it then ends with that
// request); it returns once the program is gone. A nil Early is closed.
func (e *Early) Close() {
	if e != nil && e.p != nil {
		e.p.Abandon()
		e.p = nil
	}
}

// take returns the program for a request with env and stdio, when it was started
// with them, and nil otherwise (ending it: it will not be used; it exits as its
// control pipe ends, and is reaped meanwhile, while the request's own program starts).
func (e *Early) take(env []string, stdio isolator.Stdio) *Process {
	if e == nil || e.p == nil {
		return nil
	}
	if !slices.Equal(env, e.env) || stdio.In != e.stdio.In || !sameWriter(stdio.Out, e.stdio.Out) || !sameWriter(stdio.Err, e.stdio.Err) {
		e.p.ctrl.Close()
		e.p = nil
		return nil
	}
	p := e.p
	e.p = nil
	return p
}

// sameWriter reports whether a and b are the same file, or both nil.
func sameWriter(a, b io.Writer) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	fa, ok := a.(*os.File)
	fb, ok2 := b.(*os.File)
	return ok && ok2 && fa == fb
}

var (
	_ isolator.Isolator  = (*Stub)(nil)
	_ isolator.Diagnoser = (*Stub)(nil)
)

// Name implements isolator.Isolator.
func (s *Stub) Name() string { return s.Backend }

// Check implements isolator.Isolator.
func (s *Stub) Check(ctx context.Context) isolator.Status {
	r, err := s.Call(ctx, Request{Op: OpCheck}, isolator.Stdio{})
	switch {
	case err != nil:
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "install " + s.Program + " next to devsandbox (make install)"}
	case r.Status == nil:
		return isolator.Status{State: isolator.Unavailable, Reason: s.Program + " gave no status", Fix: "reinstall devsandbox (make install)"}
	}
	return *r.Status
}

// Diagnose implements isolator.Diagnoser.
func (s *Stub) Diagnose(ctx context.Context) []isolator.Check {
	r, err := s.Call(ctx, Request{Op: OpDiagnose}, isolator.Stdio{})
	if err != nil {
		return []isolator.Check{{Name: s.Program, Status: isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "install it next to devsandbox (make install)"}}}
	}
	return r.Checks
}

// Render implements isolator.Isolator. The program renders without touching the host.
func (s *Stub) Render(p *isolator.Plan) (isolator.Rendered, error) {
	r, err := s.Call(context.Background(), Request{Op: OpRender, Plan: p}, isolator.Stdio{})
	if err != nil {
		return nil, err
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return Script(r.Script), nil
}

// Run implements isolator.Isolator.
func (s *Stub) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	r, err := s.Call(ctx, Request{Op: OpRun, Plan: p, Debug: s.Phase != nil}, stdio)
	if err == nil && s.Phase != nil && len(r.Timing) > 0 {
		s.Phase(s.Backend + " (" + strings.Join(r.Timing, ", ") + ")")
	}
	if err == nil {
		err = r.Err()
	}
	if cause := context.Cause(ctx); cause != nil {
		// The program stopped the command when ctx ended (its control pipe closed).
		if err != nil {
			return 0, fmt.Errorf("the sandbox was stopped: %w (%w)", cause, err)
		}
		return r.Code, fmt.Errorf("the command was stopped (exit status %d): %w", r.Code, cause)
	}
	if err != nil {
		return 0, err
	}
	return r.Code, nil
}

// RunWaitDelay bounds the wait for a run's program once the run's context ended.
const RunWaitDelay = 30 * time.Second

// Call runs the program for req, with the Stub's settings, and returns its answer
// (whose error, r.Err, is the caller's to check). A run (stdio.Out set) gets the
// caller's streams, and its forwarded signals with ForwardSignals; other requests get
// none, and the program's stderr becomes the error when it gives no result.
//
// A run uses the program Prestart started (Early) when it can.
func (s *Stub) Call(ctx context.Context, req Request, stdio isolator.Stdio) (*Result, error) {
	path := s.path()
	if path == "" {
		return nil, fmt.Errorf("%w: the %s isolator is in %s, which is not installed next to devsandbox; install it (make install)", isolator.ErrUnavailable, s.Backend, s.Program)
	}
	if err := buildstamp.CheckSelf(s.Program, path); err != nil {
		return nil, err
	}
	req.Settings = marshal(s.Settings)
	env := s.environ(req.Plan)
	forward := stdio.Out != nil && s.ForwardSignals
	if req.Op == OpRun {
		if p := s.Early.take(env, stdio); p != nil {
			// As Start's context does for a run: the end of ctx sends Stop.
			defer context.AfterFunc(ctx, func() { _ = sendStop(ctx, p.ctrl) })()
			return call(stdio.In, forward, func() (*Process, error) { return p, p.Send(req) })
		}
	}
	prog := Program{Path: path, Env: env, Stdio: stdio}
	if req.Op == OpRun {
		// Once ctx ends, the program stops the command (SIGTERM, then after the stop
		// grace the kill) and cleans up (a container's removal: docker.StopBound);
		// past this, it is killed, and what it leaves is the next run's or
		// `sandboxes prune`'s.
		prog.WaitDelay = RunWaitDelay + s.StopGrace
		prog.Graceful = true
	}
	return Call(ctx, prog, req, forward)
}

// path is the program's path ("" when it is not installed).
func (s *Stub) path() string {
	if s.Path != "" {
		return s.Path
	}
	return Beside(s.Program)
}

// Args encodes an operation's arguments for Request.Args.
func Args(v any) json.RawMessage { return marshal(v) }

// environ is the program's environment: the host's, with the Plan's host values.
func (s *Stub) environ(p *isolator.Plan) []string {
	env := maps.Clone(s.Environ)
	if env == nil {
		env = map[string]string{}
	}
	if p != nil {
		maps.Copy(env, p.HostEnv)
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
