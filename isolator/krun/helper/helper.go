// Package helper connects devsandbox to devsandbox-krun, the program that links the
// krun backend. The podman bindings cost every process that links them several
// milliseconds of package initialisation, so devsandbox (the bwrap launch path) has only
// Stub, which runs devsandbox-krun as a child and hands it the request on a pipe.
//
// The contract between the two:
//
//   - fd 3 of the helper is the control pipe: one JSON Request line, then one byte per
//     signal devsandbox received, to forward to the command. Its end of file means
//     devsandbox is gone (exited or killed): the helper takes the container down.
//   - fd 4 is the result pipe: one JSON Result.
//   - stdin, stdout and stderr are devsandbox's own.
//   - The environment is devsandbox's: secret values reach the helper there, by the
//     names the Plan gives (isolator.Plan.HostEnv is never serialised), never in argv
//     or on the pipes.
//
// This package imports nothing from podman; see deps_test.go in cmd/devsandbox.
package helper

import (
	"errors"
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// Program is the helper's file name, installed next to devsandbox.
const Program = "devsandbox-krun"

// Settings are the krun.* settings and what the backend needs from the host.
type Settings struct {
	Image     string `json:"image"`     // krun.image
	Runtime   string `json:"runtime"`   // krun.runtime
	CPUs      int    `json:"cpus"`      // krun.cpus
	MemoryMiB int    `json:"memoryMiB"` // krun.memory_mib
	Socket    string `json:"socket"`    // krun.podman_socket; "" = discovered
	Home      string `json:"home"`      // docker.home, the in-container home
	Version   string `json:"version"`   // devsandbox's
	// KeepContainer is docker.keep_container, which krun refuses.
	KeepContainer bool `json:"keepContainer,omitempty"`
	// RuntimeDir is $XDG_RUNTIME_DIR ("" when unset); User and UID are the host user's.
	RuntimeDir string `json:"runtimeDir"`
	User       string `json:"user"`
	UID        int    `json:"uid"`
	// Nft overrides the host's nft for egress allowlist ("": the default path;
	// the integration tests point it at a failing program).
	Nft string `json:"nft,omitempty"`
}

// Signal is a signal number forwarded to the command.
type Signal byte

// Operations of a Request.
const (
	OpRun      = "run"
	OpRender   = "render"
	OpCheck    = "check"
	OpDiagnose = "diagnose"
)

// Request is what devsandbox asks of the helper.
type Request struct {
	Op       string         `json:"op"`
	Settings Settings       `json:"settings"`
	Plan     *isolator.Plan `json:"plan,omitempty"`
	Debug    bool           `json:"debug,omitempty"`
}

// Error classes carried across the pipe, so errors.Is works on devsandbox's side.
const (
	classUnavailable = "unavailable"
	classProtection  = "protection"
)

// Result is the helper's answer.
type Result struct {
	Code   int              `json:"code"`
	Error  string           `json:"error,omitempty"`
	Class  string           `json:"class,omitempty"`
	Script string           `json:"script,omitempty"`
	Status *isolator.Status `json:"status,omitempty"`
	Checks []isolator.Check `json:"checks,omitempty"`
	Timing []string         `json:"timing,omitempty"` // "phase 1.2ms", in order
}

// errorOf turns an error into the Result fields.
func errorOf(err error) (msg, class string) {
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, isolator.ErrUnavailable):
		class = classUnavailable
	case errors.Is(err, isolator.ErrProtection):
		class = classProtection
	}
	return err.Error(), class
}

// classError is an error received from the helper, with its class restored.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.class }

// err returns the Result's error, or nil.
func (r *Result) err() error {
	if r.Error == "" {
		return nil
	}
	switch r.Class {
	case classUnavailable:
		return &classError{r.Error, isolator.ErrUnavailable}
	case classProtection:
		return &classError{r.Error, isolator.ErrProtection}
	}
	return errors.New(r.Error)
}

// ErrKeep refuses keep_container: a krun container cannot be exec'd into.
var ErrKeep = fmt.Errorf("%w: --keep-container (docker.keep_container) is not possible with the krun isolator: a libkrun microVM runs exactly one command and cannot be exec'd into; run without it, or use --isolator=docker", isolator.ErrUnavailable)

// hostEnvNames are the variables whose host values the Plan needs at run time.
func hostEnvNames(p *isolator.Plan) []string {
	var names []string
	for _, e := range p.Env {
		if e.FromHost {
			names = append(names, e.Name)
		}
	}
	for _, s := range p.Secrets {
		if s.EnvSource != "" {
			names = append(names, s.EnvSource)
		}
	}
	return names
}
