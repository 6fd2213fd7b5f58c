// Package prestart holds what a bwrap launch started ahead of its plan needs and can
// decide without touching the host: the launch record (what the previous launch of
// the same command line gave bwrap), the vetting of a record's argv before bwrap is
// started from it (Vet), and the comparison of that early start with the fresh
// rendering (Compare).
//
// The record is trusted for nothing. Vet admits only argv whose effects before
// bubblewrap's --block-fd leave the host as it was (no file created, truncated,
// linked or chmod-ed outside a tmpfs of the sandbox's own, no mount point created on
// the host), so a forged record can at worst start a bwrap that is then killed; and
// Compare uses the early start only when everything bwrap consumed equals what the
// fresh plan renders. Nothing here opens, starts or writes anything; the launch path
// does (isolator/bwrap).
//
// A record never holds the value of a variable passed from the host, of a secret, or
// of a variable taken for a credential: only their names. It holds what
// `devsandbox --dry-run` prints, and the content of small generated files that hold
// no secret (KindContent: the generated ~/.ssh/config, /etc/passwd), which the
// sandbox's command may read anyway; a secret file's content, never.
package prestart

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Version is the record format this package writes and reads; a record of another
// version is not used (ErrRecord). Version 2: a generated file's content (KindContent).
const Version = 2

// MaxRecord bounds a record's encoded size: a larger one is not written and not read.
const MaxRecord = 256 << 10

// SessionPlaceholder stands for the session /tmp's name in a record's argv: the early
// start makes a session directory of its own and puts its name there.
const SessionPlaceholder = "<session>"

// ErrRecord is wrapped by every refusal to encode or decode a record.
var ErrRecord = errors.New("launch record not usable")

// FileKind is what a descriptor of the record's argv carries.
type FileKind string

const (
	// KindSource is a bind source (--bind-fd, --ro-bind-fd): the early start opens
	// Path itself, as O_PATH, no symbolic link followed.
	KindSource FileKind = "source"
	// KindData is a file's content (--file, --ro-bind-data): a pipe the launch writes
	// only after the comparison, with the fresh content: a secret file, a copy of a
	// host file, or a generated file larger than MaxContent. No content is recorded.
	KindData FileKind = "data"
	// KindContent is a generated file that holds no secret (--file, --ro-bind-data):
	// the record keeps its content, at most MaxContent bytes, which the early start
	// writes into the pipe before bwrap starts, so bwrap does not wait for the fresh
	// plan to read it; the launch uses the early start only when the fresh plan's
	// content is the same, byte for byte (Compare). A secret (a secret file, a
	// secret from a variable) is never one: it stays a KindData pipe.
	KindContent FileKind = "content"
	// KindSeccomp is the syscall filter (--seccomp), which bwrap reads only after its
	// block: the fresh program, written at release.
	KindSeccomp FileKind = "seccomp"
)

// File is one descriptor the argv names.
type File struct {
	FD   int
	Kind FileKind
	// Path is a KindSource's host path; empty for the others.
	Path string `json:",omitempty"`
	// Content is a KindContent's bytes; nil for the others.
	Content []byte `json:",omitempty"`
}

// MaxContent bounds a KindContent's size: what a new pipe holds at the least (one
// page), so the early start writes it whole before bwrap reads, without a writer
// that must outlive the start.
const MaxContent = 4096

// EnvKind says where an environment variable's value comes from.
type EnvKind string

const (
	// EnvPlain is a value devsandbox set (the view's HOME, PATH, env.set), which
	// --dry-run prints too: recorded.
	EnvPlain EnvKind = "plain"
	// EnvHost is passed from the host variable of the same name: name only.
	EnvHost EnvKind = "host"
	// EnvSecret is a secret delivered as a variable from the host variable Source:
	// names only.
	EnvSecret EnvKind = "secret"
)

// Env is one variable of bwrap's environment, in order.
type Env struct {
	Name string
	Kind EnvKind
	// Value is an EnvPlain's value; never set for the others.
	Value string `json:",omitempty"`
	// Source is an EnvSecret's host variable.
	Source string `json:",omitempty"`
}

// Record is what the previous launch of the same command line in the same working
// directory gave bwrap.
type Record struct {
	Version int
	// Key identifies the launch it may stand for (LaunchKey); the file it is kept in
	// is named after it too.
	Key string
	// Bwrap is the path of the bubblewrap binary.
	Bwrap string
	// Argv is bwrap's argv as rendered ("bwrap" first), the session /tmp's name as
	// SessionPlaceholder.
	Argv []string
	// TmpBase is the directory of the session /tmp directories (the project's state
	// tmp/), which Argv binds at /tmp as TmpBase/SessionPlaceholder; empty when /tmp
	// is a tmpfs.
	TmpBase string `json:",omitempty"`
	// Env is bwrap's environment, in order.
	Env []Env
	// Files are the descriptors Argv names, FD ascending.
	Files []File
}

// LaunchKey identifies a launch by the user's uid, its working directory and
// devsandbox's arguments: a digest, so a value given on the command line is not kept
// in the clear in a file name or a record.
func LaunchKey(uid int, wd string, args []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "devsandbox-prestart %d\x00%d\x00%s\x00", Version, uid, wd)
	for _, a := range args {
		fmt.Fprintf(h, "%d\x00%s\x00", len(a), a)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Encode returns r's stored form. It refuses a record that would keep a value it
// must not (a host variable's or a secret's) or that is malformed (validate).
func Encode(r *Record) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if len(b) > MaxRecord {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrRecord, len(b), MaxRecord)
	}
	return b, nil
}

// Decode reads a record from rd (at most MaxRecord bytes), strictly: an unknown
// field, another version, trailing data or a malformed record is ErrRecord.
func Decode(rd io.Reader) (*Record, error) {
	b, err := io.ReadAll(io.LimitReader(rd, MaxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if len(b) > MaxRecord {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrRecord, MaxRecord)
	}
	r, err := decodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// validate checks the record's own consistency; Vet checks what its argv would do.
func (r *Record) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRecord, fmt.Sprintf(format, args...))
	}
	if r.Version != Version {
		return bad("version %d, not %d", r.Version, Version)
	}
	if len(r.Key) != 32 || strings.Trim(r.Key, "0123456789abcdef") != "" {
		return bad("malformed key")
	}
	if !absClean(r.Bwrap) {
		return bad("bwrap's path %q is not an absolute clean path", r.Bwrap)
	}
	if len(r.Argv) < 2 || r.Argv[0] != "bwrap" {
		return bad("the argv is not bwrap's")
	}
	if r.TmpBase != "" && !absClean(r.TmpBase) {
		return bad("the session /tmp's directory %q is not an absolute clean path", r.TmpBase)
	}
	seen := map[string]bool{}
	for _, e := range r.Env {
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
			return bad("malformed variable name %q", e.Name)
		}
		if seen[e.Name] {
			return bad("variable %s twice", e.Name)
		}
		seen[e.Name] = true
		switch e.Kind {
		case EnvPlain:
			if strings.ContainsRune(e.Value, 0) || e.Source != "" {
				return bad("variable %s: malformed", e.Name)
			}
		case EnvHost:
			if e.Value != "" || e.Source != "" {
				return bad("variable %s is passed from the host: its value is never recorded", e.Name)
			}
		case EnvSecret:
			if e.Value != "" {
				return bad("variable %s is a secret: its value is never recorded", e.Name)
			}
			if e.Source == "" || strings.ContainsAny(e.Source, "=\x00") {
				return bad("secret %s: malformed host variable", e.Name)
			}
		default:
			return bad("variable %s: unknown kind %q", e.Name, e.Kind)
		}
	}
	for i, f := range r.Files {
		if i > 0 && f.FD <= r.Files[i-1].FD {
			return bad("descriptors not in ascending order")
		}
		if f.FD < MinFD || f.FD > MaxFD {
			return bad("descriptor %d out of range", f.FD)
		}
		switch f.Kind {
		case KindSource:
			if !absClean(f.Path) {
				return bad("descriptor %d: source %q is not an absolute clean path", f.FD, f.Path)
			}
			if f.Content != nil {
				return bad("descriptor %d: a source has no content", f.FD)
			}
		case KindData, KindSeccomp:
			if f.Path != "" || f.Content != nil {
				return bad("descriptor %d: a %s descriptor has no path and no recorded content", f.FD, f.Kind)
			}
		case KindContent:
			if f.Path != "" {
				return bad("descriptor %d: a %s descriptor has no path", f.FD, f.Kind)
			}
			if len(f.Content) > MaxContent {
				return bad("descriptor %d: a content of %d bytes, more than %d", f.FD, len(f.Content), MaxContent)
			}
		default:
			return bad("descriptor %d: unknown kind %q", f.FD, f.Kind)
		}
	}
	return nil
}

// The descriptors a record may name: after the readiness socket and the status pipe
// (isolator/bwrap's ReadyFD 3 and StatusFD 4), and few enough to hold open.
const (
	MinFD = 5
	MaxFD = 1024
)

// absClean reports whether p is an absolute path in its clean form.
func absClean(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}
