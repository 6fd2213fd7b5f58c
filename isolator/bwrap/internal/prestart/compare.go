package prestart

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrMismatch is wrapped by Compare's differences: the early start is not used.
var ErrMismatch = errors.New("the early start differs from the fresh plan")

// Identity is what a descriptor's file is: its device and inode, and the mount it was
// reached through (statx's mount id), so that the same file bound from another mount
// (with other flags) is another.
type Identity struct {
	Dev, Ino, MntID uint64
}

// FD is one descriptor bwrap is given.
type FD struct {
	FD   int
	Kind FileKind
	// ID is a KindSource's identity; zero for a pipe (KindData, KindSeccomp), whose
	// content the launch writes after the comparison, from the fresh plan.
	ID Identity
	// Content is a KindContent's bytes: the early start's the record's, written before
	// bwrap started; the fresh launch's the fresh plan's. Nil for the others.
	Content []byte
}

// Launch is what bwrap consumes before its --block-fd: the binary, its argv (without
// the early start's own --block-fd), its environment in order, its descriptors, and
// the session /tmp directory the argv binds ("" when /tmp is a tmpfs).
type Launch struct {
	Path    string
	Argv    []string
	Env     []string // NAME=VALUE
	FDs     []FD     // FD ascending
	Session string
}

// Compare reports whether the early start's launch equals the fresh one in everything
// bwrap consumed before its block; the first difference wraps ErrMismatch and says
// what differs without a value (a variable by name, an argument by position).
func Compare(early, fresh *Launch) error {
	differ := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMismatch, fmt.Sprintf(format, args...))
	}
	if early.Path != fresh.Path {
		return differ("another bwrap binary")
	}
	if early.Session != fresh.Session {
		return differ("another session /tmp")
	}
	for i := 0; i < len(early.Argv) || i < len(fresh.Argv); i++ {
		if i >= len(early.Argv) || i >= len(fresh.Argv) {
			return differ("bwrap's argv has %d words, the fresh one %d", len(early.Argv), len(fresh.Argv))
		}
		if early.Argv[i] != fresh.Argv[i] {
			return differ("bwrap's argument %d", i)
		}
	}
	if err := compareEnv(early.Env, fresh.Env); err != nil {
		return err
	}
	if len(early.FDs) != len(fresh.FDs) {
		return differ("%d descriptors, the fresh plan %d", len(early.FDs), len(fresh.FDs))
	}
	for i, e := range early.FDs {
		f := fresh.FDs[i]
		switch {
		case e.FD != f.FD || e.Kind != f.Kind:
			return differ("descriptor %d is a %s one, the fresh plan's %d a %s one", e.FD, e.Kind, f.FD, f.Kind)
		case e.Kind != KindSource && (e.ID != (Identity{}) || f.ID != (Identity{})):
			return differ("descriptor %d: a %s descriptor with a file's identity", e.FD, e.Kind)
		case e.Kind == KindContent:
			// What bwrap was given, byte for byte: a forged record's content is in the
			// sandbox already, and must be the fresh plan's for its command to run.
			if !bytes.Equal(e.Content, f.Content) {
				return differ("descriptor %d's content is not the fresh plan's", e.FD)
			}
		case e.Kind != KindSource:
			if e.Content != nil || f.Content != nil {
				return differ("descriptor %d: a %s descriptor with a recorded content", e.FD, e.Kind)
			}
		case e.ID == (Identity{}) || e.ID != f.ID:
			return differ("descriptor %d is another file than the fresh plan's", e.FD)
		}
	}
	return nil
}

// compareEnv compares two environments in order, naming a variable, never a value.
func compareEnv(early, fresh []string) error {
	name := func(kv string) string {
		n, _, _ := strings.Cut(kv, "=")
		return n
	}
	for i := 0; i < len(early) || i < len(fresh); i++ {
		switch {
		case i >= len(fresh):
			return fmt.Errorf("%w: the variable %s is not the fresh plan's", ErrMismatch, name(early[i]))
		case i >= len(early):
			return fmt.Errorf("%w: the fresh plan's variable %s is missing", ErrMismatch, name(fresh[i]))
		case name(early[i]) != name(fresh[i]):
			return fmt.Errorf("%w: variable %d is %s, the fresh plan's %s", ErrMismatch, i, name(early[i]), name(fresh[i]))
		case early[i] != fresh[i]:
			return fmt.Errorf("%w: the value of %s", ErrMismatch, name(early[i]))
		}
	}
	return nil
}

// Environ returns bwrap's environment from the record: plain values as recorded,
// the others from lookup (devsandbox's own environment) by name. A variable to pass
// that is not set fails: the fresh plan would differ or fail itself.
func (r *Record) Environ(lookup func(string) (string, bool)) ([]string, error) {
	env := make([]string, 0, len(r.Env))
	for _, e := range r.Env {
		switch e.Kind {
		case EnvPlain:
			env = append(env, e.Name+"="+e.Value)
		case EnvHost, EnvSecret:
			from := e.Name
			if e.Kind == EnvSecret {
				from = e.Source
			}
			v, ok := lookup(from)
			if !ok {
				return nil, fmt.Errorf("%w: the host variable %s is not set", ErrMismatch, from)
			}
			env = append(env, e.Name+"="+v)
		}
	}
	return env, nil
}
