package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/procgroup"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// ErrNeedsFiles is returned by WrapArgv for plans that deliver generated files,
// secret files or the syscall filter, which need descriptors: use Command for those.
var ErrNeedsFiles = errors.New("the plan delivers files through descriptors")

// WrapArgv returns a bwrap command line that runs inner under p, for an agent harness
// that spawns its own subprocesses. Run it inside a Session (Begin before, End after
// the command exits): the Session makes the host directories, marks the project in
// use for `devsandbox sandboxes prune`, and watches what the command writes to the
// project's git metadata and tripwires (Plan.Git, Plan.Tripwires, Plan.Subdir);
// without one in this process, WrapArgv and Command fail with
// isolator.ErrProtection. A command line
// cannot carry descriptors: its binds are by path, without Run's and Command's check
// that what is mounted is what was checked (package pin); prefer Command where the
// project may be written by another sandbox while this one starts. With p.Self empty
// the command runs without the devsandbox-init. It needs no descriptors: /etc
// files are bound instead of copied (the host's /etc/passwd too, not
// SystemView.Passwd) and /tmp is a fresh tmpfs, unless p names a session dir
// (Tmp.Session), which must be one a lock holds (tmpdir.Acquire) for as long as the
// command runs: prune removes the others. The caller runs it with
// the plan's environment (Env), which carries secrets, never the argv. Plans with
// generated files or secret files (a Data mount, secrets.files) return ErrNeedsFiles;
// proxy modes need p.Egress.Proxy to point at a proxy the caller runs. The syscall
// filter is a descriptor too: WrapArgv serves only plans with
// p.Syscalls.Unfiltered set, run without the init (p.Self empty).
func WrapArgv(p *isolator.Plan, inner []string) ([]string, error) {
	if !p.Syscalls.Unfiltered {
		return nil, fmt.Errorf("%w: the syscall policy's seccomp program (use Command)", ErrNeedsFiles)
	}
	for _, m := range p.Mounts {
		if m.Kind == isolator.Data {
			return nil, fmt.Errorf("%w: %s (%s)", ErrNeedsFiles, m.Target(p.User.HostHome), m.Why)
		}
	}
	for _, s := range p.Secrets {
		if s.AsFile {
			return nil, fmt.Errorf("%w: secret file %s", ErrNeedsFiles, s.Name)
		}
	}
	spec, err := wrapSpec(p, inner, true)
	if err != nil {
		return nil, err
	}
	if _, err := inSession(p); err != nil {
		return nil, err
	}
	return append(append([]string{}, spec.Prefix...), spec.Argv...), nil
}

// Env returns the environment to start WrapArgv's command line with: the plan's
// variables and its env secrets, read from the plan's host environment, and the
// init's own (Spec.InitEnv), which it removes before it starts the command; a
// variable of the dynamic loader's (LD_PRELOAD, ...) renamed, which the init names
// back for the command, so that bwrap on the host does not act on it. With the
// init, a GOMAXPROCS for the command goes in the plan (Plan.Env): one the caller adds
// to this environment (or to Command's) is removed by the init with its own.
func Env(p *isolator.Plan) ([]string, error) {
	spec, err := wrapSpec(p, []string{"true"}, true)
	if err != nil {
		return nil, err
	}
	return childEnv(spec, p.HostEnv)
}

// Command returns a command running inner under p with everything WrapArgv cannot
// do: generated and secret files are fed through pipes while bwrap starts, and bind
// sources are opened now and mounted by descriptor (package pin), as Run does, the
// init checking them when p has one. Run it inside a Session, as WrapArgv's; start it with
// cmd.Start, then close the parent's copies of cmd.ExtraFiles, and wait with
// cmd.Wait; stdio is the caller's to set.
func Command(ctx context.Context, p *isolator.Plan, inner []string) (*exec.Cmd, error) {
	// What the plan itself cannot do is said first, before any source is opened;
	// so is a program on the host's PATH the sandbox could have planted.
	first, err := wrapSpec(p, inner, false)
	if err != nil {
		return nil, err
	}
	progs := []string{first.Argv[0]}
	if len(first.Prefix) > 0 {
		progs = append(progs, first.Prefix[0])
	}
	for _, prog := range progs {
		if bin, err := exec.LookPath(prog); err == nil {
			if err := isolator.HostProgram(p, filepath.Base(bin), bin); err != nil {
				return nil, err
			}
		}
	}
	held, err := inSession(p)
	if err != nil {
		return nil, err
	}
	pins, err := pin.Plan(p)
	if err != nil {
		return nil, err
	}
	pp, index := pins.Apply()
	spec, err := wrapSpec(pp, inner, false)
	if err != nil {
		pins.Close()
		return nil, err
	}
	env, err := childEnv(spec, p.HostEnv)
	if err != nil {
		pins.Close()
		return nil, err
	}
	if len(spec.Checks) > 0 && initBinary(p) != "" {
		env = append(env, wire.ManifestEnv+"="+wire.EncodeChecks(spec.Checks, pin.BootID()))
	}
	files, _, err := dataFiles(spec.Files, func(i int) *os.File { return pins.Sources[index[i]].File }, nil)
	if err != nil {
		pins.Close()
		return nil, err
	}
	pins.Empty.Close() // the others are files of the command, the caller's to close
	argv := append(append([]string{}, spec.Prefix...), spec.Argv...)
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s", isolator.ErrUnavailable, installHint)
	}
	if spec.Scope != "" && len(spec.Prefix) > 0 {
		if env, err = scopeStartEnv(p, env); err != nil {
			return nil, err
		}
	}
	// Killed (SIGKILL to bwrap, the default Cancel) when a Session holding the
	// project sees the disk reserve breached.
	cmd := exec.CommandContext(stopOnLow(ctx, held), bin, argv[1:]...)
	// Killed with bwrap's process group: bwrap's child is in it until its setsid and
	// has no parent-death signal before its exec, so bwrap killed in its setup would
	// leave it waiting for ever. A library run has no terminal whose keyboard
	// signals the group would miss.
	procgroup.Own(cmd, 0)
	cmd.Env = env
	// fds 3 (readiness) and 4 (prologue status) are unused in library runs.
	cmd.ExtraFiles = append([]*os.File{nil, nil}, files...)
	return cmd, nil
}

// wrapSpec renders p for inner as a library run: no readiness report, a tmpfs /tmp,
// no terminal, and (for WrapArgv) no copied files. No /etc snapshot either: it is
// held locked for the life of a run, which a library caller's command outlives.
func wrapSpec(p *isolator.Plan, inner []string, noCopies bool) (*Spec, error) {
	if len(inner) == 0 {
		return nil, errors.New("no command to wrap")
	}
	q := *p
	q.Command, q.TTY = inner, false
	o := renderOptions{noCopies: noCopies, noSnapshot: true}
	if noCopies && q.System.Passwd != nil {
		// A command line carries no descriptor: the copy PrepareHost wrote.
		f, err := PasswdFile(p)
		if err != nil {
			return nil, err
		}
		o.passwdFile = f
	}
	if q.Tmp.Kind != "tmpfs" && q.Tmp.Session == "" {
		q.Tmp = isolator.Tmp{Kind: "tmpfs", Size: q.Tmp.Size}
	}
	if q.Egress.NeedsFirewall() {
		return nil, errors.New("the allowlist egress mode needs devsandbox's own launch (pasta and the prologue); use proxy or none")
	}
	return render(&q, egress.DefaultBinaries, o)
}
