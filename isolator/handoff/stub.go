package handoff

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	if err != nil {
		return 0, err
	}
	if s.Phase != nil && len(r.Timing) > 0 {
		s.Phase(s.Backend + " (" + strings.Join(r.Timing, ", ") + ")")
	}
	if err := r.Err(); err != nil {
		return 0, err
	}
	return r.Code, nil
}

// Call runs the program for req, with the Stub's settings, and returns its answer
// (whose error, r.Err, is the caller's to check). A run (stdio.Out set) gets the
// caller's streams and forwarded signals; other requests get none, and the
// program's stderr becomes the error when it gives no result.
func (s *Stub) Call(ctx context.Context, req Request, stdio isolator.Stdio) (*Result, error) {
	path := s.Path
	if path == "" {
		path = Beside(s.Program)
	}
	if path == "" {
		return nil, fmt.Errorf("%w: the %s isolator is in %s, which is not installed next to devsandbox; install it (make install)", isolator.ErrUnavailable, s.Backend, s.Program)
	}
	req.Settings = marshal(s.Settings)
	prog := Program{Path: path, Env: s.environ(req.Plan), Stdio: stdio}
	return Call(ctx, prog, req, stdio.Out != nil)
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
