package handoff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestMain makes the test binary play a backend's program when asked, with a fake
// backend.
func TestMain(m *testing.M) {
	if os.Getenv("HANDOFF_TEST") == "beside" {
		fmt.Print(Beside(os.Getenv("HANDOFF_BESIDE")))
		os.Exit(0)
	}
	if os.Getenv("HANDOFF_TEST") == "serve" {
		defer func() {
			// A program slow to exit once it answered (a big process's teardown).
			if os.Getenv("HANDOFF_LINGER") != "" {
				time.Sleep(time.Minute)
			}
		}()
		// The head start records what it saw of the request, before the Plan is
		// decoded and the backend made (the "head" command prints it).
		head := func(op string, settings, plan json.RawMessage) {
			var p struct{ Command []string }
			_ = json.Unmarshal(plan, &p)
			headSeen = fmt.Sprintf("%s %s %q", op, settings, p.Command)
		}
		if os.Getenv("HANDOFF_HEAD") == "none" {
			head = nil
		}
		exit(ServeEarly(ServeIsolator(func(j *Job) (Backend, error) {
			var s settings
			if err := json.Unmarshal(j.Settings, &s); err != nil {
				return nil, err
			}
			return &fake{s: s, sigs: j.Signals, phase: j.Phase}, nil
		}, map[string]Handler{"echo": func(j *Job) Result { return Result{Data: j.Args} }}), head, os.Stdin, os.Stdout, os.Stderr))
		return
	}
	os.Exit(m.Run())
}

// exit exits with code, but only after TestMain's deferred calls when it is 0.
func exit(code int) {
	if code != 0 {
		os.Exit(code)
	}
}

type settings struct{ Image, Runtime string }

// headSeen is what the program's head start saw of its request.
var headSeen string

// fake is the backend: it reports what it received on stdout.
type fake struct {
	s     settings
	sigs  <-chan Signal
	phase func(string)
}

func (*fake) Name() string { return "krun" }
func (f *fake) Check(context.Context) isolator.Status {
	return isolator.Status{State: isolator.Unavailable, Reason: "no kvm for " + f.s.Image, Fix: "fix"}
}
func (f *fake) Diagnose(context.Context) []isolator.Check {
	return []isolator.Check{{Name: "podman", Status: isolator.Status{State: isolator.Active}, Detail: f.s.Runtime}}
}
func (f *fake) Render(p *isolator.Plan) (isolator.Rendered, error) {
	if p.Command[0] == "fail" {
		return nil, fmt.Errorf("%w: rendering", isolator.ErrUnavailable)
	}
	return Script("podman run " + strings.Join(p.Command, " ") + "\n"), nil
}
func (f *fake) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	if f.phase != nil {
		f.phase("start")
	}
	switch p.Command[0] {
	case "protect":
		return 0, fmt.Errorf("%w: mask not in effect", isolator.ErrProtection)
	case "head":
		fmt.Fprintf(stdio.Out, "head: %s; plan: %q\n", headSeen, p.Command)
		return 0, nil
	case "pid":
		fmt.Fprintf(stdio.Out, "pid=%d secret=%s\n", os.Getpid(), p.HostEnv["API_TOKEN"])
		return 0, nil
	case "cancel":
		fmt.Fprintln(stdio.Out, "waiting")
		select {
		case <-ctx.Done():
			fmt.Fprintf(stdio.Out, "stop now: %v\n", isolator.StopsNow(ctx))
			return 0, nil
		case <-time.After(10 * time.Second):
			return 1, nil
		}
	case "signal":
		fmt.Fprintln(stdio.Out, "waiting")
		select {
		case s := <-f.sigs:
			return 128 + int(s), nil
		case <-time.After(10 * time.Second):
			return 1, nil
		}
	}
	fmt.Fprintf(stdio.Out, "secret=%s args=%d\n", p.HostEnv["API_TOKEN"], len(os.Args))
	return 7, nil
}

func stub() *Stub {
	return &Stub{
		Backend:  "krun",
		Program:  "devsandbox-test-backend",
		Settings: settings{Image: "img", Runtime: "runc"},
		// GORACE: a program of a -race build otherwise sleeps a second as it exits,
		// longer than Abandon waits for it (TestPrestartClosed).
		Environ: map[string]string{"HANDOFF_TEST": "serve", "PATH": os.Getenv("PATH"), "GORACE": "atexit_sleep_ms=0"},
		Path:    os.Args[0],
	}
}

func plan(cmd ...string) *isolator.Plan {
	return &isolator.Plan{
		Command: cmd,
		Secrets: []isolator.Secret{{Name: "API_TOKEN", EnvSource: "API_TOKEN"}},
		HostEnv: map[string]string{"API_TOKEN": "s3cret"},
	}
}

func TestRunRoundTrip(t *testing.T) {
	var out bytes.Buffer
	s := stub()
	var phases []string
	s.Phase = func(n string) { phases = append(phases, n) }
	code, err := s.Run(context.Background(), plan("echo"), isolator.Stdio{Out: &out, Err: os.Stderr})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	// The secret reached the helper through its environment; its argv is "serve" alone.
	if got := out.String(); got != "secret=s3cret args=2\n" {
		t.Errorf("helper saw %q", got)
	}
	if len(phases) != 1 || !strings.HasPrefix(phases[0], "krun (start ") {
		t.Errorf("phases %q", phases)
	}
}

// The program's head start sees the request's operation, settings and Plan before the
// Plan is decoded and served, and the Plan still arrives whole.
func TestHeadStart(t *testing.T) {
	var out bytes.Buffer
	code, err := stub().Run(context.Background(), plan("head", "a b"), isolator.Stdio{Out: &out, Err: os.Stderr})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	want := `head: run {"Image":"img","Runtime":"runc"} ["head" "a b"]; plan: ["head" "a b"]` + "\n"
	if got := out.String(); got != want {
		t.Errorf("program printed %q, want %q", got, want)
	}
}

// Without a head start, the request is served whole.
func TestNoHeadStart(t *testing.T) {
	var out bytes.Buffer
	s := stub()
	s.Environ["HANDOFF_HEAD"] = "none"
	code, err := s.Run(context.Background(), plan("head", "a b"), isolator.Stdio{Out: &out, Err: os.Stderr})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	want := `head: ; plan: ["head" "a b"]` + "\n"
	if got := out.String(); got != want {
		t.Errorf("program printed %q, want %q", got, want)
	}
}

func TestErrorClassesCrossThePipe(t *testing.T) {
	_, err := stub().Run(context.Background(), plan("protect"), isolator.Stdio{Out: &bytes.Buffer{}})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "mask not in effect") {
		t.Errorf("Run: %v", err)
	}
	_, err = stub().Render(plan("fail"))
	if !errors.Is(err, isolator.ErrUnavailable) {
		t.Errorf("Render: %v", err)
	}
	r, err := stub().Render(plan("a", "b"))
	if err != nil || r.Script() != "podman run a b\n" {
		t.Errorf("Render = %v, %v", r, err)
	}
	if st := stub().Check(context.Background()); st.State != isolator.Unavailable || st.Reason != "no kvm for img" {
		t.Errorf("Check = %+v", st)
	}
	if rows := stub().Diagnose(context.Background()); len(rows) != 1 || rows[0].Detail != "runc" {
		t.Errorf("Diagnose = %+v", rows)
	}
}

// With ForwardSignals, a signal devsandbox receives reaches the backend once, through
// the control pipe.
func TestSignalForwarding(t *testing.T) {
	r, w, _ := os.Pipe()
	defer r.Close()
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		s := stub()
		s.ForwardSignals = true
		code, err = s.Run(context.Background(), plan("signal"), isolator.Stdio{Out: w})
		w.Close()
	}()
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); string(buf[:n]) != "waiting\n" {
		t.Fatalf("read %q", buf[:n])
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	<-done
	if err != nil || code != 128+int(syscall.SIGUSR1) {
		t.Errorf("Run = %d, %v", code, err)
	}
}

// The class of a run's cancel crosses the pipe: isolator.ErrStopNow (the command is
// killed without the stop grace) as StopNow, any other cause as Stop.
func TestStopNowCrossesThePipe(t *testing.T) {
	for _, c := range []struct {
		cause error
		want  string
	}{
		{fmt.Errorf("the disk is full: %w", isolator.ErrStopNow), "waiting\nstop now: true\n"},
		{errors.New("interrupted"), "waiting\nstop now: false\n"},
	} {
		t.Run(c.cause.Error(), func(t *testing.T) {
			r, w, _ := os.Pipe()
			defer r.Close()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			out := make(chan string)
			go func() {
				b, _ := io.ReadAll(r)
				out <- string(b)
			}()
			errc := make(chan error, 1)
			go func() {
				_, err := stub().Run(ctx, plan("cancel"), isolator.Stdio{Out: &firstLine{w: w, seen: func() { cancel(c.cause) }}})
				w.Close()
				errc <- err
			}()
			if err := <-errc; !errors.Is(err, c.cause) {
				t.Errorf("Run's error %v does not wrap the cause %v", err, c.cause)
			}
			if got := <-out; got != c.want {
				t.Errorf("the program saw %q; want %q", got, c.want)
			}
		})
	}
}

// firstLine writes to w and calls seen once the first line went through.
type firstLine struct {
	w    io.Writer
	seen func()
	done bool
}

func (f *firstLine) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if !f.done && bytes.Contains(b, []byte("\n")) {
		f.done = true
		f.seen()
	}
	return n, err
}

// An operation of the program's own answers with its data.
func TestExtraOperation(t *testing.T) {
	r, err := stub().Call(context.Background(), Request{Op: "echo", Args: Args([]string{"a", "b"})}, isolator.Stdio{})
	if err != nil || r.Err() != nil || string(r.Data) != `["a","b"]` {
		t.Errorf("Call = %+v, %v", r, err)
	}
}

func TestMissingHelper(t *testing.T) {
	s := stub()
	s.Path = ""
	if _, err := s.Run(context.Background(), plan("x"), isolator.Stdio{}); !errors.Is(err, isolator.ErrUnavailable) {
		t.Errorf("Run: %v", err)
	}
}

// An error that says a protection failed keeps that class across the pipe even when
// its cause says the engine is unavailable: the class decides whether sandbox.mode =
// auto may run the command unsandboxed, and a protection's failure must not.
func TestProtectionClassWinsOverItsCause(t *testing.T) {
	cause := fmt.Errorf("%w: the engine went away", isolator.ErrUnavailable)
	var r Result
	r.SetError(fmt.Errorf("%w: starting the container: %w", isolator.ErrProtection, cause))
	err := r.Err()
	if !errors.Is(err, isolator.ErrProtection) || isolator.IsUnavailable(err) {
		t.Errorf("class %q: protection %v, unavailable %v; want a protection failure only", r.Class, errors.Is(err, isolator.ErrProtection), isolator.IsUnavailable(err))
	}
	if !isolator.IsUnavailable(cause) {
		t.Errorf("IsUnavailable(%v) = false", cause)
	}
}

// A program started ahead (Prestart) serves the run when the run's environment and
// streams are the ones it was started with; otherwise it is ended and another one
// started with the run's environment: a secret the Plan adds reaches the program in
// its environment only, never on the pipe.
func TestPrestart(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	stdio := isolator.Stdio{Out: out, Err: os.Stderr}
	read := func() string {
		t.Helper()
		b, _ := os.ReadFile(out.Name())
		_ = out.Truncate(0)
		_, _ = out.Seek(0, 0)
		return string(b)
	}

	// The host environment holds the secret already (config.Host.Vars): used.
	s := stub()
	s.Environ["API_TOKEN"] = "s3cret"
	s.Early = s.Prestart(stdio)
	if s.Early == nil {
		t.Fatal("Prestart started nothing")
	}
	early := s.Early.p.cmd.Process.Pid
	if code, err := s.Run(context.Background(), plan("pid"), stdio); err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if got, want := read(), fmt.Sprintf("pid=%d secret=s3cret\n", early); got != want {
		t.Errorf("the run was served as %q, want %q (the program started ahead)", got, want)
	}
	if s.Early.p != nil {
		t.Errorf("the program started ahead is still there to use")
	}

	// The Plan adds the secret: the program started ahead has not got it.
	s = stub()
	s.Early = s.Prestart(stdio)
	ahead := s.Early.p
	if code, err := s.Run(context.Background(), plan("pid"), stdio); err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	got := read()
	if strings.Contains(got, fmt.Sprintf("pid=%d ", ahead.cmd.Process.Pid)) || !strings.HasSuffix(got, " secret=s3cret\n") {
		t.Errorf("the run was served as %q by the program started ahead (pid %d), or without the secret", got, ahead.cmd.Process.Pid)
	}
	select {
	case err := <-ahead.done:
		if err != nil {
			t.Errorf("the program started ahead did not end quietly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the program started ahead was not ended")
	}

	// Other streams: not used either.
	s = stub()
	s.Environ["API_TOKEN"] = "s3cret"
	s.Early = s.Prestart(isolator.Stdio{Out: os.Stdout, Err: os.Stderr})
	ahead = s.Early.p
	if code, err := s.Run(context.Background(), plan("pid"), stdio); err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if got := read(); strings.Contains(got, fmt.Sprintf("pid=%d ", ahead.cmd.Process.Pid)) || !strings.HasPrefix(got, "pid=") {
		t.Errorf("the run was served as %q (started ahead with other streams: pid %d)", got, ahead.cmd.Process.Pid)
	}
}

// A program started ahead that gets no request (the run failed before it ran) ends
// quietly when it is closed.
func TestPrestartClosed(t *testing.T) {
	var errb bytes.Buffer
	s := stub()
	e := s.Prestart(isolator.Stdio{Err: &errb})
	p := e.p
	e.Close()
	e.Close() // twice: a no-op
	if p.cmd.ProcessState == nil || !p.cmd.ProcessState.Success() || errb.Len() != 0 {
		t.Errorf("closed: %v, stderr %q", p.cmd.ProcessState, errb.String())
	}
	var none *Early
	none.Close()
}

// Call acts on the program's whole answer without waiting for the program to exit,
// when the program writes its output itself.
func TestAnswerBeforeExit(t *testing.T) {
	s := stub()
	s.Environ["HANDOFF_LINGER"] = "1"
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	code, err := s.Run(context.Background(), plan("pid"), isolator.Stdio{Out: out, Err: out})
	b, _ := os.ReadFile(out.Name())
	var pid int
	if _, serr := fmt.Sscanf(string(b), "pid=%d secret=s3cret\n", &pid); serr != nil || err != nil || code != 0 {
		t.Fatalf("Run = %d, %v, %q", code, err, b)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("Run returned only once the program (pid %d) exited: %v", pid, err)
	}
}
