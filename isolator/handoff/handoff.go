// Package handoff is the one way devsandbox moves work into a second program: the
// backends whose client libraries would slow every launch (devsandbox-docker,
// devsandbox-krun) and the session proxy (devsandbox-proxy). The caller builds the
// Plan once; the Plan, with the program's settings, is what crosses.
//
// The contract between the caller and the program:
//
//   - fd 3 of the program is the control pipe: one JSON Request line, then one byte
//     per signal the caller received, to forward to the command, or the byte Stop
//     (0): the caller's run was cancelled, the command is stopped as bwrap stops it
//     (SIGTERM, the stop grace, then the kill), or the byte StopNow (255): the run
//     was cancelled with isolator.ErrStopNow, the command is killed at once. Its end of file means the caller is
//     gone (exited or killed) or done: the program winds down at once (takes the
//     container down, shuts the proxy down), and the Job's context ends with the
//     cause ErrCallerGone. The caller may start the program before it knows the
//     request (Stub.Prestart): an end of file before the request line ends the
//     program quietly.
//   - fd 4 is the result pipe: one JSON Result, written when the request is done.
//   - Descriptors from 5 on are the request's own (the proxy's listening socket).
//   - stdin, stdout and stderr are the caller's own (run requests), or stderr alone.
//   - Secret values reach the program in its environment, by the names the Plan gives
//     (isolator.Plan.HostEnvNames; HostEnv is never serialised), never in argv or on
//     the pipes.
//
// Errors keep their class (isolator.ErrUnavailable, ErrProtection, ErrConfig) across
// the pipe, so errors.Is works on the caller's side.
//
// This package links no client library; the programs' own packages do.
package handoff

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// Descriptors of the program (see the package doc).
const (
	ControlFD = 3
	ResultFD  = 4
	// FirstExtraFD is the first of the request's own descriptors.
	FirstExtraFD = 5
)

// ServeArg is the program's one argument when the caller starts it.
const ServeArg = "serve"

// Signal is a signal number forwarded to the command.
type Signal byte

// Stop is the control byte of a cancelled run (no signal has the number 0).
const Stop Signal = 0

// StopNow is the control byte of a run cancelled with a cause wrapping
// isolator.ErrStopNow (no signal has the number 255): the program's Job context
// ends with that class, and the command is killed without the stop grace.
const StopNow Signal = 255

// ErrCallerGone is the cause of a Job's context that ended because the control pipe
// did (the caller exited, was killed, or is done): nobody waits for the command any
// more, so the program takes it down without a grace.
var ErrCallerGone = errors.New("the caller of the program is gone")

// Operations every backend program answers (see ServeIsolator).
const (
	OpRun      = "run"
	OpRender   = "render"
	OpCheck    = "check"
	OpDiagnose = "diagnose"
)

// Request is what the caller asks of the program.
type Request struct {
	Op string `json:"op"`
	// Settings are the program's settings (its backend's, the proxy's), JSON.
	Settings json.RawMessage `json:"settings,omitempty"`
	Plan     *isolator.Plan  `json:"plan,omitempty"`
	// Args are the operation's own arguments, JSON.
	Args  json.RawMessage `json:"args,omitempty"`
	Debug bool            `json:"debug,omitempty"`
}

// Error classes carried across the pipe.
const (
	classUnavailable = "unavailable"
	classProtection  = "protection"
	classConfig      = "config"
)

// Result is the program's answer.
type Result struct {
	Code   int              `json:"code"`
	Error  string           `json:"error,omitempty"`
	Class  string           `json:"class,omitempty"`
	Script string           `json:"script,omitempty"`
	Status *isolator.Status `json:"status,omitempty"`
	Checks []isolator.Check `json:"checks,omitempty"`
	Timing []string         `json:"timing,omitempty"` // "phase 1.2ms", in order
	// Data is the operation's own answer, JSON.
	Data json.RawMessage `json:"data,omitempty"`
}

// SetError records err, with its class, in r.
func (r *Result) SetError(err error) {
	switch {
	case err == nil:
		r.Error, r.Class = "", ""
		return
	case errors.Is(err, isolator.ErrProtection): // before Unavailable (isolator.IsUnavailable)
		r.Class = classProtection
	case errors.Is(err, isolator.ErrUnavailable):
		r.Class = classUnavailable
	case errors.Is(err, isolator.ErrConfig):
		r.Class = classConfig
	}
	r.Error = err.Error()
}

// Err returns the Result's error with its class restored, or nil.
func (r *Result) Err() error {
	if r.Error == "" {
		return nil
	}
	switch r.Class {
	case classUnavailable:
		return &classError{r.Error, isolator.ErrUnavailable}
	case classProtection:
		return &classError{r.Error, isolator.ErrProtection}
	case classConfig:
		return &classError{r.Error, isolator.ErrConfig}
	}
	return errors.New(r.Error)
}

// classError is an error received from the program, with its class restored.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.class }

// Script is a rendered run received from a program.
type Script string

// Script implements isolator.Rendered.
func (s Script) Script() string { return string(s) }

// marshal is json.Marshal for values that always encode (settings structs).
func marshal(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("handoff: encoding %T: %v", v, err))
	}
	return b
}
