package bwrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
)

// errNotRecorded is wrapped when a launch is not one an early start may stand for.
var errNotRecorded = errors.New("this launch is not started early")

// recordOf returns the launch record of spec, rendered from p (the pinned Plan, its
// session /tmp named or not) and started with the bwrap binary bin; etcDir is the
// directory of the /etc snapshot Run opened (etcsnap.Snapshot's Path: the spec names
// only the snapshots' base, Plan.System.Snapshot); env is what Run adds to the
// rendered environment by value (the init's manifest). It refuses, with
// errNotRecorded, a launch an early start cannot stand for: one with a prefix (pasta,
// the cgroup step, systemd-run) or a session cgroup, and one with a variable taken
// for a credential set by value, whose value a record never keeps.
func recordOf(spec *Spec, p *isolator.Plan, key, bin, etcDir string, env []string) (*prestart.Record, error) {
	switch {
	case len(spec.Prefix) > 0:
		return nil, fmt.Errorf("%w: bwrap is started by %s", errNotRecorded, spec.Prefix[0])
	case spec.Cgroup != nil || spec.Scope != "":
		return nil, fmt.Errorf("%w: bwrap is started in the cgroup of its limits", errNotRecorded)
	case p.Tmp.Kind != "session" && p.Tmp.Kind != "tmpfs":
		return nil, fmt.Errorf("%w: sandbox.tmp is %q", errNotRecorded, p.Tmp.Kind)
	}
	r := &prestart.Record{Version: prestart.Version, Key: key, Bwrap: bin}
	if p.Tmp.Kind == "session" {
		r.TmpBase = p.Tmp.Dir
	}
	sess := p.Tmp.Dir + "/" + p.Tmp.Session
	for i, a := range spec.Argv {
		if i > 0 && a == sess && spec.Argv[i-1] == "--bind" {
			a = p.Tmp.Dir + "/" + prestart.SessionPlaceholder
		}
		r.Argv = append(r.Argv, a)
	}
	for _, e := range spec.Env {
		switch {
		case e.FromHost:
			r.Env = append(r.Env, prestart.Env{Name: e.Name, Kind: prestart.EnvHost})
		case e.Credential:
			return nil, fmt.Errorf("%w: the variable %s is taken for a credential and set by value", errNotRecorded, e.Name)
		default:
			r.Env = append(r.Env, prestart.Env{Name: e.Name, Kind: prestart.EnvPlain, Value: e.Value})
		}
	}
	for _, s := range spec.SecretEnv {
		r.Env = append(r.Env, prestart.Env{Name: s.Name, Kind: prestart.EnvSecret, Source: s.EnvSource})
	}
	for _, kv := range append(append([]string{}, spec.InitEnv...), env...) {
		name, value, _ := strings.Cut(kv, "=")
		r.Env = append(r.Env, prestart.Env{Name: name, Kind: prestart.EnvPlain, Value: value})
	}
	for _, f := range spec.Files {
		rf := prestart.File{FD: f.FD}
		switch f.Kind {
		case Pinned:
			rf.Kind, rf.Path = prestart.KindSource, f.Source
		case EtcSnapshot:
			if etcDir == "" {
				return nil, fmt.Errorf("%w: the /etc snapshot's directory is not known", errNotRecorded)
			}
			rf.Kind, rf.Path = prestart.KindSource, etcDir
		case Seccomp:
			rf.Kind = prestart.KindSeccomp
		default:
			rf.Kind = prestart.KindData
			if recordedContent(f) {
				rf.Kind, rf.Content = prestart.KindContent, f.Content
			}
		}
		r.Files = append(r.Files, rf)
	}
	if _, err := prestart.Encode(r); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotRecorded, err)
	}
	return r, nil
}

// recordedContent reports whether a record keeps f's content (prestart.KindContent):
// a file devsandbox generated (Content: the sandbox's /etc/passwd, the ssh client
// config, /etc/hosts, a CA bundle), never a secret (SecretFile, SecretEnv) nor a copy
// of a host file (HostFile), and small enough for the early start to write whole
// into its new pipe. The early start gives bwrap the recorded bytes at once; the
// launch uses it only when the fresh plan's are the same (prestart.Compare).
func recordedContent(f File) bool {
	return f.Kind == Content && len(f.Content) <= prestart.MaxContent
}

// recordArgv is the argv an early start runs bwrap with from rec (before its own
// --block-fd): the binary's path first, the session /tmp session in place.
func recordArgv(rec *prestart.Record, session string) []string {
	argv := append([]string{rec.Bwrap}, rec.Argv[1:]...)
	for i := 2; i < len(argv); i++ {
		if rec.TmpBase != "" && argv[i-1] == "--bind" && argv[i] == rec.TmpBase+"/"+prestart.SessionPlaceholder {
			argv[i] = session
		}
	}
	return argv
}

// launchOf is what Run would give bwrap for spec, for prestart.Compare: bin, the
// spec's argv, env (childEnv and what Run adds), each descriptor's kind, a source's
// identity by id (the pinned source or the /etc snapshot Run opened), and the session
// /tmp ("" with /tmp in memory).
func launchOf(spec *Spec, bin string, env []string, session string, id func(File) (prestart.Identity, error)) (prestart.Launch, error) {
	l := prestart.Launch{Path: bin, Argv: append([]string{bin}, spec.Argv[1:]...), Env: env, Session: session}
	for _, f := range spec.Files {
		fd := prestart.FD{FD: f.FD, Kind: prestart.KindData}
		switch f.Kind {
		case Pinned, EtcSnapshot:
			fd.Kind = prestart.KindSource
			var err error
			if fd.ID, err = id(f); err != nil {
				return prestart.Launch{}, err
			}
		case Seccomp:
			fd.Kind = prestart.KindSeccomp
		default:
			if recordedContent(f) {
				fd.Kind, fd.Content = prestart.KindContent, f.Content
			}
		}
		l.FDs = append(l.FDs, fd)
	}
	return l, nil
}
