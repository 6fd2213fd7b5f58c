// Command devsandbox runs a command in a sandbox scoped to the current project.
// This package is wiring only: it splits argv, parses flags with urfave/cli, and hands
// the work to config, isolator/plan and the isolator backends.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
)

// Exit statuses of devsandbox itself (the command's own status passes through).
const (
	exitFailure = 125 // devsandbox failed: config, isolator, a protection
	exitUsage   = 2
)

func main() {
	startup()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ(), start: time.Now()}
	os.Exit(a.main(os.Args[1:]))
}

// app carries the process's inputs so the CLI can be exercised in tests.
type app struct {
	stdin          *os.File
	stdout, stderr io.Writer
	environ        []string
	start          time.Time

	command []string // what to sandbox, split off before urfave/cli parses flags
	args    []string // argv without the program name, for handing the run to devsandbox-docker
}

// usageError marks errors that are the caller's misuse of the command line.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitError carries an exit status out of an action.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func (a *app) main(args []string) int {
	flags, sub, command := splitArgs(args)
	a.command, a.args = command, args
	a.earlyDispatch(args)
	argv := append([]string{"devsandbox"}, flags...)
	argv = append(argv, sub...)
	err := a.cli().Run(argv)
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "devsandbox: %v\nRun `devsandbox --help` for usage.\n", ue.err)
		return exitUsage
	}
	fmt.Fprintf(a.stderr, "devsandbox: %v\n", err)
	return exitFailure
}

func (a *app) cli() *cli.App {
	return &cli.App{
		Name:  "devsandbox",
		Usage: "run a command in a sandbox scoped to the current project",
		UsageText: "devsandbox [flags] [--] [COMMAND [ARG...]]\n" +
			"   devsandbox doctor | sandboxes list|rm|prune | image build | config validate FILE | version\n\n" +
			"Runs COMMAND (default: your shell) with the project read-write at its own path, a private\n" +
			"home, a private /tmp and nothing else of your home. Flags stop at the first word that is\n" +
			"not a flag; `--` ends them explicitly (`devsandbox -- doctor` runs a program called doctor).",
		Version:                   config.Version,
		HideVersion:               true,
		Writer:                    a.stdout,
		ErrWriter:                 a.stderr,
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		Flags: runFlags(),
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usageError{fmt.Errorf("unexpected argument %q", c.Args().First())}
			}
			return a.run(c)
		},
		Commands: a.commands(),
	}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "isolator", Usage: "backend: auto, bwrap, docker, krun (`NAME`; also DEVSANDBOX_ISOLATOR)"},
		&cli.StringFlag{Name: "mode", Usage: "`MODE`: enforce (fail closed), auto (unsandboxed with a warning when no isolator works), off"},
		&cli.StringFlag{Name: "egress", Usage: "network `MODE`: proxy (default: public hosts through the audited proxy, never the LAN or host services), allowlist (only --allow entries), none, open (the host's network)"},
		&cli.StringSliceFlag{Name: "allow", Usage: "allow egress to `HOST[:PORT]`, *.domain, IP or CIDR (repeatable; proxy and allowlist modes)"},
		&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "`NAME=VALUE` sets a variable; a bare NAME passes the host value as a secret (repeatable)"},
		&cli.StringSliceFlag{Name: "secret-file", Usage: "`NAME=PATH`: the host file appears read-only at /run/secrets/NAME (repeatable)"},
		&cli.StringSliceFlag{Name: "mount", Usage: "`SRC[:DST][:ro]` bind a host path (repeatable)"},
		&cli.StringSliceFlag{Name: "publish", Aliases: []string{"p"}, Usage: "`HOST_PORT:SANDBOX_PORT`: the host's 127.0.0.1:HOST_PORT reaches a server in the sandbox (repeatable; every egress mode and isolator; Linux hosts)"},
		&cli.BoolFlag{Name: "read-only", Usage: "project read-only except .git and sandbox.writable_dirs"},
		&cli.BoolFlag{Name: "keep-container", Usage: "docker: keep one container per project and exec into it on later runs"},
		&cli.StringFlag{Name: "image", Usage: "container `IMAGE` of the docker or krun isolator"},
		&cli.StringFlag{Name: "config", Usage: "use config `FILE` instead of the user config file"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print what would run (secrets and passed-through values as names only) and exit"},
		&cli.BoolFlag{Name: "debug", Usage: "print launch timings per phase on stderr"},
	}
}

func (a *app) flags(c *cli.Context) config.Flags {
	f := config.Flags{
		ConfigFile:  c.String("config"),
		Allow:       c.StringSlice("allow"),
		Env:         c.StringSlice("env"),
		SecretFiles: c.StringSlice("secret-file"),
		Mounts:      c.StringSlice("mount"),
		Publish:     c.StringSlice("publish"),
	}
	str := func(name string) *string {
		if !c.IsSet(name) {
			return nil
		}
		v := c.String(name)
		return &v
	}
	f.Isolator, f.Mode, f.Egress = str("isolator"), str("mode"), str("egress")
	if c.IsSet("read-only") {
		v := c.Bool("read-only")
		f.ReadOnly = &v
	}
	if c.IsSet("keep-container") {
		v := c.Bool("keep-container")
		f.KeepContainer = &v
	}
	f.Image = str("image")
	return f
}

func (a *app) warn(format string, args ...any) {
	fmt.Fprintf(a.stderr, "devsandbox: warning: "+format+"\n", args...)
}

// timer records launch phases for --debug.
type timer struct {
	last   time.Time
	phases []string
}

func (t *timer) mark(name string) {
	now := time.Now()
	t.phases = append(t.phases, fmt.Sprintf("%s %.2fms", name, float64(now.Sub(t.last).Microseconds())/1000))
	t.last = now
}

func (t *timer) String() string { return strings.Join(t.phases, ", ") }
