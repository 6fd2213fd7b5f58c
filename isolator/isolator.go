// Package isolator defines the backend-neutral Plan and the Isolator interface that
// renders and runs it. Backends live in subpackages (isolator/bwrap, ...); the command
// line wires them into a table passed to Select, so this package imports none of them.
package isolator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
)

// ErrUnavailable is wrapped by errors that mean the isolator cannot run on this host.
var ErrUnavailable = errors.New("isolator unavailable")

// ErrProtection is wrapped by errors that mean a requested protection (a mask, a
// secret file, an egress rule) could not be applied; the run is aborted.
var ErrProtection = errors.New("protection could not be applied")

// IsUnavailable reports whether err means only that the isolator cannot run here: it
// wraps ErrUnavailable and not ErrProtection. Errors keep their causes' chains (a
// protection's failure may wrap an engine that went away), and one that says a
// protection failed never lets sandbox.mode = auto run the command unsandboxed.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrProtection)
}

// Guessed is a failure told with devsandbox's guess at its cause: Error is Msg (the
// failure, then what it may mean and the fix), Unwrap is Err (the failure as met: an
// engine's own message, and every class; Msg adds none). A caller that learns the
// cause (pin.Set.Gone: a bind source removed on the host) tells Err, with the cause,
// in its place: the guess would send the user the wrong way. It is the outermost
// error of the failure it tells, so that nothing is lost with it.
type Guessed struct {
	Err error
	Msg string
}

func (g *Guessed) Error() string { return g.Msg }
func (g *Guessed) Unwrap() error { return g.Err }

// WithGuess is err told with hint after it (a Guessed), or err itself when hint is
// empty.
func WithGuess(err error, hint string) error {
	if hint == "" {
		return err
	}
	return &Guessed{Err: err, Msg: err.Error() + hint}
}

// ErrConfig is wrapped by errors caused by configured values that do not fit the host
// (a bind source that does not exist, a secret file that cannot be read).
var ErrConfig = errors.New("configuration does not fit this host")

// ErrStopNow is wrapped by the cause of a run's context that must stop the sandbox
// without the stop grace: its whole process tree is killed at once, since the
// command cannot be trusted to exit when asked (a file system the sandbox fills,
// diskguard). What the command wrote stays.
var ErrStopNow = errors.New("the sandbox must stop at once")

// StopsNow reports whether ctx ended with a cause wrapping ErrStopNow.
func StopsNow(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrStopNow)
}

// State is the result of an availability check.
type State int

const (
	Active      State = iota // usable
	Unavailable              // cannot run here; Reason and Fix say why and what to do
	Bypassed                 // sandboxing is off by choice (mode off)
	// Warning is a doctor row's only: usable, but weaker than it could be; Reason
	// says how, Fix what removes it.
	Warning
)

func (s State) String() string {
	switch s {
	case Active:
		return "active"
	case Unavailable:
		return "unavailable"
	case Bypassed:
		return "bypassed"
	case Warning:
		return "warning"
	}
	return "unknown"
}

// Status is what Check reports.
type Status struct {
	State  State
	Reason string
	Fix    string
}

// ForwardedSignals are the signals devsandbox passes on to the sandboxed command.
var ForwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Stdio is the command's standard streams.
type Stdio struct {
	In       *os.File
	Out, Err io.Writer
}

// Rendered is the pure, printable form of a Plan for one backend (what --dry-run shows).
type Rendered interface {
	// Script returns a shell-quoted command line (with comments) equivalent to the run.
	// Secret and passthrough values appear as names only.
	Script() string
}

// Isolator is one sandbox backend.
//
// Render is pure: it must not touch the host and must return the same output for the
// same Plan. Run applies the Plan and blocks until the command exits; it returns the
// command's exit status (128+N when killed by signal N) or an error when the sandbox
// itself failed, in which case no part of the command ran unprotected. When ctx ends
// while the command runs, Run stops it (SIGTERM, then SIGKILL to the whole sandbox
// after a bound the backend documents; at once, with no SIGTERM, when the cause wraps
// ErrStopNow), cleans up as after any exit, and returns the command's status with an
// error wrapping context.Cause(ctx); ended before the
// command ran, it returns such an error alone. Unless the backend is told to forward
// them (an option the CLI sets), Run subscribes to none of the process's signals
// (SIGWINCH aside, while it relays a terminal), and it writes nothing to the process's
// own stdout or stderr: the command's output goes to stdio, the backend's warnings to
// its Warn hook (or stdio.Err). Check probes the host and is never called on the
// launch path, only by doctor and after a failed launch.
type Isolator interface {
	Name() string
	Check(ctx context.Context) Status
	Render(p *Plan) (Rendered, error)
	Run(ctx context.Context, p *Plan, stdio Stdio) (int, error)
}

// Check is one row of `devsandbox doctor`.
type Check struct {
	Name string
	Status
	Detail string // what was found, when useful beyond the state
}

// Diagnoser is implemented by isolators that can explain their host requirements in
// detail (doctor). Diagnose may start processes; it is never on the launch path.
type Diagnoser interface {
	Diagnose(ctx context.Context) []Check
}

// HostChecker is implemented by an isolator whose launch checks the host its own way
// before anything starts (docker on a remote engine: the mount destinations only, its
// sources not being this host's files). --dry-run makes the same checks, so that it
// stops, with the same message and status, where a launch would; an isolator without
// it pins the Plan's sources as bwrap's launch does (package pin, Check).
type HostChecker interface {
	CheckHost(p *Plan) error
}

// Table maps isolator names to constructors; cmd/ builds it explicitly.
type Table map[string]func() Isolator

// Names returns the table's names, sorted.
func (t Table) Names() []string {
	var ns []string
	for n := range t {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Quick is implemented by isolators that can tell cheaply (no process started, no
// daemon contacted) whether they can run; Select uses it for "auto".
type Quick interface {
	QuickCheck() Status
}

// Select returns the isolator called name from table. For "auto" it returns the first
// name of order that is usable and reports fellBack when that is not order[0]. Usability
// is judged by QuickCheck where available, else by Check.
func Select(ctx context.Context, name string, table Table, order []string) (iso Isolator, fellBack bool, err error) {
	if name != "auto" {
		mk, ok := table[name]
		if !ok {
			return nil, false, fmt.Errorf("unknown isolator %q (available: %s)", name, strings.Join(table.Names(), ", "))
		}
		return mk(), false, nil
	}
	var reasons []string
	for i, n := range order {
		mk, ok := table[n]
		if !ok {
			continue
		}
		iso := mk()
		var st Status
		if q, ok := iso.(Quick); ok {
			st = q.QuickCheck()
		} else {
			st = iso.Check(ctx)
		}
		if st.State == Active {
			return iso, i > 0, nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %s (%s)", n, st.Reason, st.Fix))
	}
	return nil, false, fmt.Errorf("%w: no isolator is usable: %s", ErrUnavailable, strings.Join(reasons, "; "))
}
