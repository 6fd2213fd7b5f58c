package helper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Stub is the krun isolator as devsandbox sees it: every method runs devsandbox-krun.
type Stub struct {
	Settings Settings
	// Environ is the host environment the helper runs with (config.Host.Vars).
	Environ map[string]string
	// Path is devsandbox-krun; "" means next to the running executable.
	Path string
	// Phase, when set, receives the helper's launch phases (for --debug timings).
	Phase func(name string)
}

var (
	_ isolator.Isolator  = (*Stub)(nil)
	_ isolator.Diagnoser = (*Stub)(nil)
)

// Name implements isolator.Isolator.
func (*Stub) Name() string { return "krun" }

// path returns the helper program, or "" when it is not installed.
func (s *Stub) path() string {
	if s.Path != "" {
		return s.Path
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	p := filepath.Join(filepath.Dir(exe), Program)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

var errMissing = fmt.Errorf("%w: the krun isolator is in %s, which is not installed next to devsandbox; install it (make install)", isolator.ErrUnavailable, Program)

// Check implements isolator.Isolator.
func (s *Stub) Check(ctx context.Context) isolator.Status {
	r, err := s.call(ctx, Request{Op: OpCheck}, isolator.Stdio{})
	switch {
	case err != nil:
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "install " + Program + " next to devsandbox (make install)"}
	case r.Status == nil:
		return isolator.Status{State: isolator.Unavailable, Reason: Program + " gave no status", Fix: "reinstall devsandbox (make install)"}
	}
	return *r.Status
}

// Diagnose implements isolator.Diagnoser.
func (s *Stub) Diagnose(ctx context.Context) []isolator.Check {
	r, err := s.call(ctx, Request{Op: OpDiagnose}, isolator.Stdio{})
	if err != nil {
		return []isolator.Check{{Name: Program, Status: isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "install it next to devsandbox (make install)"}}}
	}
	return r.Checks
}

// Script is a rendered run.
type Script string

// Script implements isolator.Rendered.
func (s Script) Script() string { return string(s) }

// Render implements isolator.Isolator. It runs the helper, which renders without
// touching the host.
func (s *Stub) Render(p *isolator.Plan) (isolator.Rendered, error) {
	if s.Settings.KeepContainer {
		return nil, ErrKeep
	}
	r, err := s.call(context.Background(), Request{Op: OpRender, Plan: p}, isolator.Stdio{})
	if err != nil {
		return nil, err
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return Script(r.Script), nil
}

// Run implements isolator.Isolator.
func (s *Stub) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	if s.Settings.KeepContainer {
		return 0, ErrKeep
	}
	r, err := s.call(ctx, Request{Op: OpRun, Plan: p, Debug: s.Phase != nil}, stdio)
	if err != nil {
		return 0, err
	}
	if s.Phase != nil && len(r.Timing) > 0 {
		s.Phase("krun (" + strings.Join(r.Timing, ", ") + ")")
	}
	if err := r.err(); err != nil {
		return 0, err
	}
	return r.Code, nil
}

// forwarded are the signals devsandbox passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// call runs the helper for one request and returns its result.
func (s *Stub) call(ctx context.Context, req Request, stdio isolator.Stdio) (*Result, error) {
	prog := s.path()
	if prog == "" {
		return nil, errMissing
	}
	req.Settings = s.Settings
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request for %s: %w", Program, err)
	}
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ctrlW.Close()
	resR, resW, err := os.Pipe()
	if err != nil {
		ctrlR.Close()
		return nil, err
	}
	defer resR.Close()

	cmd := exec.Command(prog, "serve")
	cmd.Env = s.environ(req.Plan)
	cmd.ExtraFiles = []*os.File{ctrlR, resW}
	var errBuf bytes.Buffer
	if req.Op == OpRun {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdioIn(stdio.In), stdio.Out, stdio.Err
	} else {
		cmd.Stderr = &errBuf
	}
	var restore func()
	if req.Op == OpRun && stdio.In != nil {
		restore = saveTerminal(stdio.In)
	}
	sigs := make(chan os.Signal, 8)
	if req.Op == OpRun {
		// The helper ignores the signals it gets directly (a terminal signals the
		// whole process group); each reaches the command once, through us.
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}
	if err := cmd.Start(); err != nil {
		ctrlR.Close()
		resW.Close()
		return nil, fmt.Errorf("%w: starting %s: %v", isolator.ErrUnavailable, prog, err)
	}
	ctrlR.Close()
	resW.Close()
	if _, err := ctrlW.Write(append(body, '\n')); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("sending the request to %s: %w", Program, err)
	}
	resc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(resR)
		resc <- b
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
loop:
	for {
		select {
		case sig := <-sigs:
			if n, ok := sig.(syscall.Signal); ok {
				_, _ = ctrlW.Write([]byte{byte(n)})
			}
		case <-ctx.Done():
			ctrlW.Close() // the helper takes the container down
			ctx = context.Background()
		case werr = <-done:
			break loop
		}
	}
	if restore != nil {
		restore()
	}
	var out []byte
	select {
	case out = <-resc:
	case <-time.After(2 * time.Second):
	}
	var r Result
	if len(bytes.TrimSpace(out)) == 0 || json.Unmarshal(out, &r) != nil {
		msg := strings.TrimSpace(errBuf.String())
		if msg == "" {
			msg = fmt.Sprint(werr)
		}
		return nil, fmt.Errorf("%w: %s ended without a result (%s); the command did not run or its status is unknown", isolator.ErrProtection, Program, msg)
	}
	return &r, nil
}

// environ is the helper's environment: the host's, with the Plan's host values.
func (s *Stub) environ(p *isolator.Plan) []string {
	env := map[string]string{}
	for k, v := range s.Environ {
		env[k] = v
	}
	if p != nil {
		for k, v := range p.HostEnv {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stdioIn keeps a nil *os.File from becoming a non-nil io.Reader.
func stdioIn(f *os.File) io.Reader {
	if f == nil {
		return nil
	}
	return f
}
