package config

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrInvalid is matched (errors.Is) by every error about the content of the
	// configuration: syntax, unknown keys, wrong types and bad values.
	ErrInvalid = errors.New("invalid configuration")

	// ErrNotImplemented is matched by errors about values the schema names but this
	// build cannot honour yet, such as egress.mode = "proxy". Those errors match
	// ErrInvalid too.
	ErrNotImplemented = errors.New("not implemented")

	// ErrProjectRestricted is matched by errors about a project file setting a key
	// only the user config may set, or loosening a protection (see checkProject).
	// Those errors match ErrInvalid too.
	ErrProjectRestricted = errors.New("not allowed in a project file")

	// ErrUntrustedChange is matched by the error Load returns when the project file
	// (or a --config file) was trusted but its content changed since: the run must
	// stop until the user reviews the file and trusts it again.
	ErrUntrustedChange = errors.New("changed since it was trusted")

	// ErrEnclosingProject is matched by the error Load returns when the project is a
	// repository nested in a project whose file the user trusted, and has no trusted
	// file of its own (see checkEnclosing).
	ErrEnclosingProject = errors.New("refusing to run without the enclosing project's file")

	// ErrUntrustedConfigFile is matched by the error Load returns when the --config
	// file lies where a sandbox can write it (LoadOptions.Writable) and its content is
	// not trusted: a sandbox could otherwise widen its next run.
	ErrUntrustedConfigFile = errors.New("not trusted")
)

// Error is a configuration error with its location. File and Line locate a value read
// from a file (Line 0 when unknown); Source names any other origin ("flag --mode",
// "env DEVSANDBOX_ISOLATOR", "env HOME") and is empty for files. Key is the dotted key
// concerned ("sandbox.mode", "proxy.credentials[0].host"), empty when none applies.
type Error struct {
	File   string
	Line   int
	Source string
	Key    string
	Err    error
}

// Error reads "FILE:LINE: KEY: problem" for file values and "SOURCE: problem" otherwise.
func (e *Error) Error() string {
	var s string
	switch {
	case e.File != "" && e.Line > 0:
		s = e.File + ":" + strconv.Itoa(e.Line) + ": "
	case e.File != "":
		s = e.File + ": "
	case e.Source != "":
		// The flag or variable already says what was wrong; the key would only repeat it.
		return e.Source + ": " + e.Err.Error()
	}
	if e.Key != "" {
		s += e.Key + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// valueError is the cause carried by an *Error: its message is the problem alone, and
// it matches its classes (ErrInvalid, ErrNotImplemented, ...) without repeating their
// text.
type valueError struct {
	msg     string
	classes []error
}

func (e *valueError) Error() string { return e.msg }

func (e *valueError) Unwrap() []error { return e.classes }

// invalidf returns a cause matching ErrInvalid.
func invalidf(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...), classes: []error{ErrInvalid}}
}

// restrictedf returns a cause matching ErrProjectRestricted and ErrInvalid.
func restrictedf(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...), classes: []error{ErrInvalid, ErrProjectRestricted}}
}

// untrustedChangef returns a cause matching ErrUntrustedChange (not ErrInvalid: the
// file may be valid, it is just not the one the user reviewed).
func untrustedChangef(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...), classes: []error{ErrUntrustedChange}}
}
