package handoff

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
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Beside returns the program name installed next to the running executable, or ""
// when it is not there.
func Beside(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	// Linux's is /proc/self/exe, a path the kernel has resolved: resolving it again
	// would only cost an lstat per directory (on the proxy modes' launch path).
	if runtime.GOOS != "linux" {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Program is how a program is started for one request.
type Program struct {
	Path string
	// Env is the program's whole environment (nil: none at all).
	Env []string
	// Stdio are the program's standard streams (nil ones are /dev/null).
	Stdio isolator.Stdio
	// Files become the program's descriptors FirstExtraFD, FirstExtraFD+1, ...
	Files []*os.File
	// SysProcAttr, when set, is the program's (process group, parent-death signal).
	SysProcAttr *syscall.SysProcAttr
	// WaitDelay bounds the wait for the program once the request's context ended
	// (which closes the control pipe, or sends Stop); then it is killed (0: no bound).
	WaitDelay time.Duration
	// Graceful: the end of the request's context sends Stop on the control pipe
	// (the program stops the command with a grace) instead of closing it.
	Graceful bool
}

// Process is a started program.
type Process struct {
	cmd    *exec.Cmd
	ctrl   *os.File // the control pipe's write end
	result chan []byte
	done   chan error
	errBuf *bytes.Buffer
	// direct: the program's streams are files it writes itself (no copying here
	// that its exit would end).
	direct bool
}

// Start starts prog and sends it req; it does not wait for the answer. The caller
// keeps the control pipe: Signal forwards signals on it, Close ends it, and so does
// the end of ctx (then the program is killed after prog.WaitDelay, when set).
func Start(ctx context.Context, prog Program, req Request) (*Process, error) {
	p, err := Launch(ctx, prog)
	if err != nil {
		return nil, err
	}
	if err := p.Send(req); err != nil {
		return nil, err
	}
	return p, nil
}

// Launch starts prog without its request, which Send gives it later; a program whose
// control pipe ends before a request exits quietly (Abandon). See Start for ctx.
func Launch(ctx context.Context, prog Program) (*Process, error) {
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		ctrlR.Close()
		ctrlW.Close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, prog.Path, ServeArg)
	// The program alone is told to wind down, then killed after WaitDelay: it is one
	// of devsandbox's own (devsandbox-docker, -krun, -proxy), whose sandbox processes
	// are the engine's, ended through its API; what it starts on the host either ends
	// with it (devsandbox-krun's anchor, at the end of the stdin it holds) or is meant
	// to outlive the run (the podman service's supervisor, in a session of its own,
	// shared by runs until it idles out).
	cmd.Cancel = ctrlW.Close // the program winds down
	if prog.Graceful {
		cmd.Cancel = func() error { return sendStop(ctx, ctrlW) }
	}
	cmd.WaitDelay = prog.WaitDelay
	cmd.Env = append([]string{}, prog.Env...) // exactly Env: nil would inherit ours
	cmd.ExtraFiles = append([]*os.File{ctrlR, resW}, prog.Files...)
	cmd.SysProcAttr = prog.SysProcAttr
	p := &Process{cmd: cmd, ctrl: ctrlW, result: make(chan []byte, 1), done: make(chan error, 1)}
	if prog.Stdio.In != nil {
		cmd.Stdin = prog.Stdio.In
	}
	cmd.Stdout = prog.Stdio.Out
	if prog.Stdio.Err != nil {
		cmd.Stderr = prog.Stdio.Err
	} else {
		p.errBuf = &bytes.Buffer{}
		cmd.Stderr = p.errBuf
	}
	_, outFile := prog.Stdio.Out.(*os.File)
	_, errFile := prog.Stdio.Err.(*os.File)
	p.direct = (prog.Stdio.Out == nil || outFile) && errFile
	err = cmd.Start()
	ctrlR.Close()
	resW.Close()
	if err != nil {
		ctrlW.Close()
		resR.Close()
		return nil, fmt.Errorf("%w: starting %s: %w", isolator.ErrUnavailable, prog.Path, err)
	}
	go func() {
		b, _ := io.ReadAll(resR)
		resR.Close()
		p.result <- b
	}()
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Send sends the program its one request. On failure the program is gone.
func (p *Process) Send(req Request) error {
	body, err := json.Marshal(req)
	if err == nil {
		_, err = p.ctrl.Write(append(body, '\n'))
		if err != nil {
			err = fmt.Errorf("sending the request to %s: %w", filepath.Base(p.cmd.Path), err)
		}
	} else {
		err = fmt.Errorf("encoding the request for %s: %w", filepath.Base(p.cmd.Path), err)
	}
	if err != nil {
		_ = p.cmd.Process.Kill()
		p.ctrl.Close()
		<-p.done
	}
	return err
}

// Abandon ends a program that was sent no request: its control pipe ends, so it
// exits; it is killed if it has not within a second. Abandon returns once it is gone.
func (p *Process) Abandon() {
	p.ctrl.Close()
	select {
	case <-p.done:
	case <-time.After(time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Signal forwards sig to the program's command.
func (p *Process) Signal(sig Signal) { _, _ = p.ctrl.Write([]byte{byte(sig)}) }

// sendStop tells the program on ctrl that the run was cancelled (Stop, or StopNow
// when ctx's cause wraps isolator.ErrStopNow); the pipe stays open until the program
// is done.
func sendStop(ctx context.Context, ctrl *os.File) error {
	b := Stop
	if isolator.StopsNow(ctx) {
		b = StopNow
	}
	_, err := ctrl.Write([]byte{byte(b)})
	return err
}

// Done delivers the program's exit error once it exited.
func (p *Process) Done() <-chan error { return p.done }

// Result returns the program's answer once it exited (werr is its exit error).
func (p *Process) Result(werr error) (*Result, error) {
	p.ctrl.Close()
	var out []byte
	select {
	case out = <-p.result:
	case <-time.After(2 * time.Second):
	}
	var r Result
	if len(bytes.TrimSpace(out)) == 0 || json.Unmarshal(out, &r) != nil {
		msg := ""
		if p.errBuf != nil {
			msg = strings.TrimSpace(p.errBuf.String())
		}
		if msg == "" {
			msg = fmt.Sprint(werr)
		}
		return nil, fmt.Errorf("%w: %s ended without a result (%s); the command did not run or its status is unknown", isolator.ErrProtection, filepath.Base(p.cmd.Path), msg)
	}
	return &r, nil
}

// Call runs prog for req and returns its answer. Signals devsandbox receives meanwhile
// (see isolator.ForwardedSignals) reach the program's command once, through the
// control pipe, when forward is set; when ctx ends, the control pipe is closed and the
// program winds down. The terminal's mode on prog.Stdio.In is put back afterwards,
// even if the program died with it in raw mode.
func Call(ctx context.Context, prog Program, req Request, forward bool) (*Result, error) {
	return call(prog.Stdio.In, forward, func() (*Process, error) { return Start(ctx, prog, req) })
}

// call is Call with a program start gives (started, or already running and sent its
// request).
func call(in *os.File, forward bool, start func() (*Process, error)) (*Result, error) {
	var restore func()
	if in != nil {
		restore = saveTerminal(in)
	}
	sigs := make(chan os.Signal, 8)
	var jobs chan os.Signal
	if forward {
		// The program ignores the signals it gets directly (a terminal signals the
		// whole process group); each reaches the command once, through us.
		signal.Notify(sigs, isolator.ForwardedSignals...)
		defer signal.Stop(sigs)
		if jobControlled {
			jobs = make(chan os.Signal, 8)
			signal.Notify(jobs, isolator.JobSignals...)
			defer signal.Stop(jobs)
		}
	}
	p, err := start()
	if err != nil {
		return nil, err
	}
	job := &callerJob{stdinTerm: in != nil && controllingTerminal(in), warn: func(m string) { fmt.Fprintln(os.Stderr, m) }}
	var werr error
	results := p.result
loop:
	for {
		select {
		case sig := <-sigs:
			if n, ok := sig.(syscall.Signal); ok {
				p.Signal(Signal(n))
			}
		case sig := <-jobs:
			job.handle(sig, p, sigs)
		case out := <-results:
			// The answer is whole once the program closed its end, as it returns
			// (Serve): a whole answer is acted on without waiting for the program's
			// exit, whose teardown costs a few milliseconds, when the program writes
			// its output itself (nothing here copies it until it exits); any other
			// waits for it.
			var r Result
			if p.direct && len(bytes.TrimSpace(out)) > 0 && json.Unmarshal(out, &r) == nil {
				p.ctrl.Close()
				if restore != nil {
					restore()
				}
				return &r, nil
			}
			results = nil
			p.result <- out // for Result
		case werr = <-p.done:
			break loop
		}
	}
	if restore != nil {
		restore()
	}
	return p.Result(werr)
}
