package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/tty"
	"github.com/devsandbox/devsandbox/tools"
)

// run is DESIGN's flow: the configuration (planner.Load), the complete Plan (planner.Build),
// the isolator (isolator.Select), then its Render (--dry-run) or Run.
func (a *app) run(c *cli.Context) error {
	ctx := context.Background()
	t := &timer{last: a.start}
	debug := c.Bool("debug")
	flags := a.flags(c)
	flags.Command = a.command
	dryRun := c.Bool("dry-run")

	l, err := a.load(flags)
	if err != nil {
		return err
	}
	if !dryRun { // a dry run writes nothing: no snapshot is built for it
		a.headStart(l.System)
		defer a.headDone()
	}
	for _, w := range l.Warnings {
		a.warn("%s", w)
	}
	cfg := l.Config
	t.mark("config")
	a.earlyConfig(cfg, l.Project.Name)

	if cfg.Host.Vars[planner.EnvMarker] != "" && flags.Isolator == nil {
		return errors.New("already inside a devsandbox sandbox: nesting is refused; pass --isolator explicitly to nest anyway")
	}
	mode := cfg.Sandbox.Mode
	if mode == "auto" && cfg.Sandbox.Environment == "prod" {
		mode = "enforce"
	}
	if mode == "off" {
		a.warn("sandbox.mode is off: %v runs WITHOUT a sandbox, with your full user rights", a.commandOrShell(cfg))
		return a.unsandboxed(cfg)
	}
	if err := containerFlags(flags, cfg.Isolator, "from "+cfg.Origins["isolator"]); err != nil {
		return err
	}
	stdio := isolator.Stdio{In: a.stdin, Out: a.stdout, Err: a.stderr}
	// The docker backend's program starts now, while the Plan is built: its start costs
	// more than planning does (handoff.Stub.Prestart; a run it does not fit starts
	// another).
	var early *handoff.Early
	if cfg.Isolator == "docker" && !dryRun {
		early = dockerStub(cfg, nil).Prestart(stdio)
		defer early.Close()
	}
	// So does the bwrap run's signal subscription. It is not stopped after the run:
	// the process exits then, with the command's status.
	if !dryRun {
		a.catchSignals(cfg)
	}
	if !dryRun {
		unlock, err := a.holdProject(ctx, filepath.Join(cfg.Host.StateHome, "devsandbox", l.Project.Name))
		if err != nil {
			return err
		}
		defer unlock()
	}
	p, pwarns, err := a.plan(l, dryRun)
	if err != nil {
		return err
	}
	for _, w := range pwarns {
		a.warn("%s", w)
	}
	t.mark("plan")

	var phase func(string) // with --debug, the backends report their launch phases
	if debug {
		phase = t.mark
	}
	iso, fellBack, err := isolator.Select(ctx, cfg.Isolator, a.isolatorTable(cfg, phase), autoOrder)
	if err == nil && fellBack {
		a.warn("bwrap is not usable here; falling back to the %s isolator", iso.Name())
	}
	if err != nil || iso.Name() != "bwrap" {
		a.stopSignals() // the other backends catch their own
	}
	if err != nil {
		early.Close()
		return a.degrade(mode, cfg, err)
	}
	if cfg.Isolator == "auto" {
		if err := containerFlags(flags, iso.Name(), "isolator = auto picked it here"); err != nil {
			return err
		}
	}
	if s, ok := iso.(*dockerhelper.Stub); ok {
		s.Early = early
	}
	if dryRun {
		if err := launchChecks(iso, p); err != nil {
			return err
		}
		r, err := iso.Render(p)
		if err != nil {
			return err
		}
		// Its words are quoted with what a terminal acts on spelled out (sh.Quote); its
		// comments name paths as they are, a name a sandbox chose among them.
		fmt.Fprint(a.stdout, termsafe.String(r.Script()))
		return nil
	}
	// The backends keep the disk reserve (Plan.Limits.DiskReserve, package
	// diskguard): a run refused or stopped under it is an error here, never a reason
	// to degrade (a full disk is no reason to run without a sandbox).
	code, err := iso.Run(ctx, p, stdio)
	if debug {
		t.mark("exit")
		fmt.Fprintf(a.stderr, "devsandbox: timings: %s; total %.2fms\n", t, float64(time.Since(a.start).Microseconds())/1000)
	}
	if err != nil {
		return a.degrade(mode, cfg, err)
	}
	if code != 0 {
		return exitError{code}
	}
	return nil
}

// holdProject holds the project's lock (package projlock) shared for the run's life:
// from before the Plan, whose proxy CA is made in the project's state directory, so
// that `sandboxes prune` and `rm` either see the run (they take the lock without
// waiting: a run holding it is going on) or have removed the project before the run
// makes anything of it. The backends take it too, around the presence a run leaves
// for prune (session /tmp, run mark), for programs that call them directly. A wait
// for prune is said on stderr; ^C ends it (the bwrap run's subscription catches it,
// else it ends the process).
func (a *app) holdProject(ctx context.Context, stateDir string) (func(), error) {
	var interrupt <-chan os.Signal
	if a.signals != nil {
		interrupt = a.signals.C
	}
	unlock, err := projlock.Shared(ctx, stateDir, func() {
		if a.signals != nil {
			a.signals.Wait() // a ^C after the line ends the wait, not the process
		}
		projlock.Waiting(a.stderr, stateDir)()
	}, interrupt)
	if err != nil {
		return nil, fmt.Errorf("the command did not run: %w", err)
	}
	return unlock, nil
}

// degrade handles an isolator that cannot run: in auto mode the command runs
// unsandboxed with a warning; otherwise the run fails closed.
func (a *app) degrade(mode string, cfg *config.Config, err error) error {
	if mode == "auto" && isolator.IsUnavailable(err) {
		what := "no isolator can run here"
		if cfg.Isolator != "auto" {
			what = "the " + cfg.Isolator + " isolator cannot run" // chosen: no other is tried
		}
		a.warn("%s (%v); sandbox.mode = auto, so the command runs WITHOUT a sandbox", what, err)
		return a.unsandboxed(cfg)
	}
	if isolator.IsUnavailable(err) {
		return unavailableNext(err, cfg)
	}
	return err
}

// unavailableNext adds to err, an isolator that cannot run, what to do next: doctor
// names each requirement with its fix (a backend's own reason may have none, such as
// what podman said), and a chosen isolator is named with where it was chosen, so
// that another can be.
func unavailableNext(err error, cfg *config.Config) error {
	if cfg.Isolator == "auto" {
		return fmt.Errorf("%w; `devsandbox doctor` shows what each isolator needs here and how to fix it", err)
	}
	from := cfg.Origins["isolator"]
	if f, ok := strings.CutPrefix(from, "flag "); ok {
		from = f
	}
	return fmt.Errorf("%w; `devsandbox doctor` (with the same flags) shows what the %s isolator needs here and how to fix it, or choose another (isolator = %s, from %s)", err, cfg.Isolator, cfg.Isolator, from)
}

// plan builds the Plan of a run from l: the launch's, or with dryRun what --dry-run
// shows (and doctor estimates from), which writes nothing.
func (a *app) plan(l *planner.Loaded, dryRun bool) (*isolator.Plan, []string, error) {
	return planner.Build(l.Config, tools.Default(), l.Probe, planner.Request{Command: a.command, TTY: a.interactive(), DryRun: dryRun, Placeholders: a.placeholders})
}

func (a *app) interactive() bool {
	out, ok := a.stdout.(*os.File)
	return a.stdin != nil && ok && tty.IsTerminal(a.stdin.Fd()) && tty.IsTerminal(out.Fd())
}

func (a *app) commandOrShell(cfg *config.Config) []string {
	if len(a.command) > 0 {
		return a.command
	}
	if sh := cfg.Host.Vars["SHELL"]; sh != "" {
		return []string{sh}
	}
	return []string{"/bin/sh"}
}

// stopSignals ends the bwrap run's signal subscription, if any: what follows gets
// the signals' default actions back.
func (a *app) stopSignals() {
	if a.signals != nil {
		a.signals.Stop()
		a.signals = nil
	}
}

// unsandboxed runs the command directly on the host (mode off, or auto without an isolator).
func (a *app) unsandboxed(cfg *config.Config) error {
	a.abandonEarly() // no bwrap run adopts it: it does not wait beside the command
	a.stopSignals()
	argv := a.commandOrShell(cfg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Env = a.environ
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitError{128 + int(ws.Signal())}
		}
		return exitError{ee.ExitCode()}
	case errors.Is(err, exec.ErrNotFound):
		fmt.Fprintf(a.stderr, "devsandbox: %s: command not found\n", termsafe.Line(argv[0]))
		return exitError{127}
	}
	fmt.Fprintf(a.stderr, "devsandbox: %s: %s\n", termsafe.Line(argv[0]), termsafe.Line(err.Error()))
	return exitError{126}
}

// containerFlags refuses the flags that ask for a container (--image,
// --keep-container) when iso, the isolator of the run, runs none: bwrap would
// ignore them, and a flag given for this run must not be dropped in silence. how
// says where iso came from. The same keys in a config file pass: one file serves
// machines with and without docker. Under isolator = auto it is called once auto
// has picked; refusing there (rather than preferring docker) keeps auto's choice
// the same with and without the flag.
func containerFlags(f config.Flags, iso, how string) error {
	if iso != "bwrap" {
		return nil
	}
	which := "the bwrap isolator (" + how + ")"
	switch {
	case f.Image != nil:
		return usageError{fmt.Errorf("--image %s names a container image, but %s runs no container, so the run would ignore it; use --isolator docker or --isolator krun to run in that image, or drop --image", *f.Image, which)}
	case f.KeepContainer != nil && *f.KeepContainer:
		return usageError{fmt.Errorf("--keep-container keeps a docker container between runs, but %s runs no container, so the run would ignore it; use --isolator docker to keep one, or drop --keep-container", which)}
	}
	return nil
}
