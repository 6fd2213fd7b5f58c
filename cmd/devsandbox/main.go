// Command devsandbox runs a command in a sandbox scoped to the current project.
// This package is wiring only: it splits argv, parses flags with urfave/cli, and hands
// the work to config, isolator/planner and the isolator backends.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/clihelp"
	"github.com/devsandbox/devsandbox/internal/launchprof"
	"github.com/devsandbox/devsandbox/internal/nocore"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
)

// exitFailure is the status of devsandbox's own failures and refusals: a config
// error, an isolator that cannot run, a protection that could not be applied, and
// misuse of the command line. The command's own status passes through, so a usage
// error must not look like a command's 2 (docker run uses 125 the same way).
const exitFailure = 125

func main() {
	startup()
	// Before any secret is read: a core of this process would hold them, in the
	// project (package nocore).
	if err := nocore.Off(); err != nil {
		fmt.Fprintf(os.Stderr, "devsandbox: cannot turn off core dumps, which would copy this run's secrets into the working directory: %v\n", err)
		os.Exit(exitFailure)
	}
	launchprof.Start() // a build with the launchprofile tag only (make profile-launch)
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ(), start: time.Now()}
	if !versionOnly(os.Args[1:]) {
		// The heap's huge page, then bwrap's early start: the start is the launch's
		// critical path (bwrap reaches its block after the Plan is ready), and its
		// own allocations (the record, its checks, the descriptors) land in the
		// huge page instead of about 95 fresh 4 KiB pages, each a fault that costs
		// 20-50 µs on a virtual machine, more than the collapse's 0.25-0.6 ms.
		prepareHeap()
		a.startEarly(os.Args[1:]) // before the configuration and the Plan (bwrap, Linux)
	}
	code := a.main(os.Args[1:])
	a.abandonEarly()
	launchprof.Stop()
	os.Exit(code)
}

// versionOnly reports whether args are exactly `version` or `--version`: those print
// the version without building the command line (urfave/cli's app, the subcommands,
// the help pages), and without preparing the heap, which only a run repays. Any
// other spelling (`-version`, `version --help`, `--version=true`) goes through
// urfave/cli as before; TestVersionFastPath holds the two paths' output equal.
func versionOnly(args []string) bool {
	return len(args) == 1 && (args[0] == "version" || args[0] == "--version")
}

// app carries the process's inputs so the CLI can be exercised in tests.
type app struct {
	stdin          *os.File
	stdout, stderr io.Writer
	environ        []string
	start          time.Time

	command []string // what to sandbox, split off before urfave/cli parses flags
	// signals: the bwrap run's subscription, made while the Plan is built
	// (catchSignals); stopped only when the process goes on without that run.
	signals *isolator.Signals
	// etcHead: the bwrap run's /etc snapshot, opened while the Plan is built
	// (headStart, Linux).
	etcHead *etcHead
	// early: bwrap started from the record of this command line's last launch,
	// before the configuration is loaded (startEarly, Linux; config.EarlyStartVar);
	// the bwrap run adopts it or abandons it.
	early *early
	// earlyOff says why no early start was tried (the variable, or sandbox.early_start),
	// for --debug; "" when one was.
	earlyOff string
	// placeholders are the credentials' placeholders the early start made for bwrap's
	// environment, for the plan (planner.Request.Placeholders); nil when none.
	placeholders map[string]string
	// planned: doctor's, the Plan a run from here would get (doctorConfig), for the
	// bwrap rows that estimate a launch (Linux); nil outside a project.
	planned *isolator.Plan
	// helpPages: lay out help text (a subcommand or a help flag was given); a run
	// shows none, and laying it out is a measurable share of a launch's start.
	helpPages bool

	warnMu sync.Mutex // warnings come from the run's watch too, while it runs
}

// usageError marks errors that are the caller's misuse of the command line.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// flagError is one of the flag package's messages about one flag, which name it with
// a single dash whatever was typed, and how to word it.
type flagError struct {
	re   *regexp.Regexp
	word func(m []string, flag string) string
}

// flagErrors are compiled on the first usage error, not at package init: every run
// would otherwise pay for them (three regexps, about 350 allocations and 40 KB of
// heap, 0.05 ms; issue 18).
var flagErrors = sync.OnceValue(func() []flagError {
	return []flagError{
		{regexp.MustCompile(`^flag provided but not defined: -(\S+)$`), func(_ []string, f string) string { return "unknown flag " + f }},
		{regexp.MustCompile(`^flag needs an argument: -(\S+)$`), func(_ []string, f string) string { return "flag " + f + " needs a value" }},
		{regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-(\S+): (.*)$`), func(m []string, f string) string {
			// The flag package's cause ("parse error") says nothing a user can act on:
			// say what the flag takes instead.
			switch {
			case strings.HasPrefix(m[0], "invalid boolean"):
				return fmt.Sprintf("flag %s: %s is not true or false (%s alone means true)", f, m[1], f)
			case wholeNumberFlags[m[2]]:
				return fmt.Sprintf("flag %s: %s is not a whole number", f, m[1])
			case numberFlags[m[2]]:
				return fmt.Sprintf("flag %s: %s is not a number", f, m[1])
			}
			return fmt.Sprintf("flag %s: %s is not a valid value (%s)", f, m[1], m[3])
		}},
	}
})

// wholeNumberFlags and numberFlags name the CLI's integer and float flags, for the
// words of a value that does not parse (TestNumberFlagKinds holds them to the CLI).
var (
	wholeNumberFlags = map[string]bool{"pids": true, "days": true}
	numberFlags      = map[string]bool{"cpus": true}
)

// usageMessage words a usage error for people: the flag package's "flag provided but
// not defined: -name" becomes "unknown flag --name", "flag needs an argument: -pids"
// "flag --pids needs a value", and so on, each flag spelled as it was typed.
func usageMessage(err error, args []string) string {
	for _, fe := range flagErrors() {
		m := fe.re.FindStringSubmatch(err.Error())
		if m == nil {
			continue
		}
		name := m[len(m)-1]
		if fe.re.NumSubexp() == 3 {
			name = m[2]
		}
		return fe.word(m, typedFlag(name, args))
	}
	return err.Error()
}

// typedFlag is flag name as args spell it (--name or -name), before any "--".
func typedFlag(name string, args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if f, _, _ := strings.Cut(a, "="); f == "--"+name {
			return f
		}
	}
	return "-" + name
}

// exitError carries an exit status out of an action.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func (a *app) main(args []string) int {
	if versionOnly(args) {
		fmt.Fprintf(a.stdout, "devsandbox %s\n", config.Version)
		return 0
	}
	return a.mainCLI(args)
}

// mainCLI parses args with urfave/cli and runs what they ask for.
func (a *app) mainCLI(args []string) int {
	flags, sub, command := splitArgs(args)
	a.command = command
	argv := append([]string{"devsandbox"}, flags...)
	argv = append(argv, sub...)
	a.helpPages = len(sub) > 0 || asksHelp(flags)
	err := a.cli().Run(argv)
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "devsandbox: %s\nRun `devsandbox --help` for usage.\n", termsafe.Line(usageMessage(ue.err, args)))
		return exitFailure
	}
	// An error may name what a sandbox made (the other link of a masked file, a
	// planted link): written escaped, it cannot act on the terminal, nor start a line
	// of its own; errors that errors.Join joined get a line each.
	for _, l := range termsafe.Lines(err) {
		fmt.Fprintf(a.stderr, "devsandbox: %s\n", l)
	}
	return exitFailure
}

// exitStatusHelp documents the exit statuses (DESIGN's CLI contract) in --help.
const exitStatusHelp = "the command's own; 128+N when it was killed by signal N; 126 when it " +
	"is not executable, 127 when it is not found; 125 when devsandbox itself failed or " +
	"was misused (an unknown flag, a bad value, a config error, an isolator that cannot " +
	"run, a protection that could not be applied), always with a message saying why. " +
	"`devsandbox doctor` exits 1 when the selected isolator cannot run, the configuration does not load, or a run from here would stop before it starts."

// asksHelp reports whether flags may ask for the top-level help page: a help flag,
// or a value that reads like one (resolved by urfave/cli, not here).
func asksHelp(flags []string) bool {
	for _, f := range flags {
		if name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "="); strings.HasPrefix(f, "-") && (name == "h" || name == "help") {
			return true
		}
	}
	return false
}

// describe lays out a subcommand's description, when help may be shown.
func (a *app) describe(text string) string {
	if !a.helpPages {
		return ""
	}
	return clihelp.Describe(text)
}

// cli is the command line; its help pages are laid out only when a.helpPages.
func (a *app) cli() *cli.App {
	const usage = "run a command in a sandbox scoped to the current project"
	const usageText = "devsandbox [flags] [--] [COMMAND [ARG...]]\n" +
		"devsandbox doctor | config show|validate|init|trust | tools list | logs proxy\n" +
		"devsandbox sandboxes list|rm|prune | image build | version\n\n" +
		"Runs COMMAND (default: your shell) with the project read-write at its own path, a private " +
		"home, a private /tmp and nothing else of your home. Flags stop at the first word that is " +
		"not a flag; `--` ends them explicitly (`devsandbox -- doctor` runs a program called doctor). " +
		"`devsandbox COMMAND --help` describes a subcommand."
	cmds := a.commands()
	onUsage := func(_ *cli.Context, err error, _ bool) error { return usageError{err} }
	setUsageErrors(cmds, onUsage)
	groupUsage("devsandbox", cmds)
	flags := runFlags()
	help := ""
	if a.helpPages {
		help = clihelp.Root("devsandbox", usage, usageText, cmds, flags, exitStatusHelp)
	} else {
		flags = fixedNames(flags)
	}
	return &cli.App{
		Name:                      "devsandbox",
		Usage:                     usage,
		UsageText:                 usageText,
		CustomAppHelpTemplate:     help,
		Version:                   config.Version,
		Compiled:                  time.Unix(0, 0), // left zero, urfave/cli stats os.Args[0] for a time no page shows
		HideVersion:               true,            // --version is one of runFlags
		Writer:                    a.stdout,
		ErrWriter:                 a.stderr,
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError:              onUsage,
		Flags:                     flags,
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				fmt.Fprintf(a.stdout, "devsandbox %s\n", config.Version)
				return nil
			}
			if c.Args().Len() > 0 {
				return usageError{fmt.Errorf("unexpected argument %q", c.Args().First())}
			}
			return a.run(c)
		},
		Commands: cmds,
	}
}

// setUsageErrors makes every subcommand report misuse as a usageError (exit 125,
// one line and a pointer to --help) instead of urfave/cli's help dump or silence: a
// flag it does not know, an argument to a command that takes none (`sandboxes prune
// NAME` would otherwise prune every project), and an unknown subcommand (urfave/cli
// answers "No help topic for 'NAME'").
func setUsageErrors(cmds []*cli.Command, f cli.OnUsageErrorFunc) {
	for _, c := range cmds {
		c.OnUsageError = f
		switch {
		case len(c.Subcommands) > 0 && c.Action == nil:
			c.Action = unknownSubcommand
		case c.Action != nil && c.ArgsUsage == "":
			c.Action = noArguments(c.Action)
		}
		setUsageErrors(c.Subcommands, f)
	}
}

// groupUsage gives each command made of subcommands a usage line naming them
// ("devsandbox config show|validate|init|trust [options]"), where urfave/cli would
// write "devsandbox config [command options]", as if it took options of its own.
func groupUsage(prefix string, cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) == 0 {
			continue
		}
		var names []string
		for _, s := range c.Subcommands {
			if !s.Hidden && s.Name != "help" {
				names = append(names, s.Name)
			}
		}
		if c.UsageText == "" {
			c.UsageText = prefix + " " + c.Name + " " + strings.Join(names, "|") + " [options]"
		}
		groupUsage(prefix+" "+c.Name, c.Subcommands)
	}
}

// commandName is c's command as typed after "devsandbox" ("config show").
func commandName(c *cli.Context) string {
	return strings.TrimPrefix(c.Command.HelpName, "devsandbox ")
}

// noArguments refuses the arguments of a command that takes none, then runs action.
func noArguments(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().Present() {
			return usageError{fmt.Errorf("%s takes no arguments (got %q)", commandName(c), c.Args().First())}
		}
		return action(c)
	}
}

// unknownSubcommand is the action of a command made of subcommands (config,
// sandboxes, ...): without a word it shows its help, as before; any word is not one of
// its subcommands, since urfave/cli would have run that one.
func unknownSubcommand(c *cli.Context) error {
	if !c.Args().Present() {
		return cli.ShowSubcommandHelp(c)
	}
	var names []string
	for _, s := range c.Command.Subcommands {
		if !s.Hidden && s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	return usageError{fmt.Errorf("%s %s: no such command (%s %s)", commandName(c), c.Args().First(), commandName(c), strings.Join(names, "|"))}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "isolator", Usage: "the isolator `NAME`: auto (bwrap when installed, else docker), bwrap, docker or krun; also DEVSANDBOX_ISOLATOR"},
		&cli.StringFlag{Name: "mode", Usage: "sandbox `MODE`: enforce (fail closed, the default), auto (unsandboxed with a warning when the isolator cannot run), off"},
		&cli.StringFlag{Name: "egress", Usage: "network `MODE`: proxy (default: public hosts through the audited proxy, never the LAN or host services), allowlist (only egress.allow and --allow entries), none (loopback only), open (the host's network)"},
		&cli.StringSliceFlag{Name: "allow", Usage: "allow egress to `HOST[:PORT]`, *.domain, IP or CIDR (repeatable; proxy and allowlist modes)"},
		&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "`NAME=VALUE` sets a variable; a bare NAME passes the host value as a secret (repeatable)"},
		&cli.StringSliceFlag{Name: "secret-file", Usage: "`NAME=PATH`: the host file appears read-only at /run/secrets/NAME (repeatable)"},
		&cli.StringSliceFlag{Name: "mount", Usage: "`SRC[:DST][:ro]` bind a host path (repeatable)"},
		&cli.StringSliceFlag{Name: "publish", Aliases: []string{"p"}, Usage: "`HOST_PORT:SANDBOX_PORT`: the host's 127.0.0.1:HOST_PORT reaches a server in the sandbox (repeatable; every egress mode and isolator; Linux hosts)"},
		&cli.BoolFlag{Name: "read-only", Usage: "project read-only except .git and sandbox.writable_dirs"},
		&cli.BoolFlag{Name: "keep-container", Usage: "docker: keep one container per project and exec into it on later runs (refused when the run uses bwrap or krun)"},
		&cli.StringFlag{Name: "image", Usage: "container `IMAGE` of the docker or krun isolator (refused when the run uses bwrap)"},
		&cli.IntFlag{Name: "pids", Usage: "at most `N` tasks in the sandbox (limits.pids; default 4096; 0: no limit)"},
		&cli.StringFlag{Name: "memory", Usage: "memory limit such as 512m or 4g (`SIZE`, limits.memory); the run fails where it cannot be enforced"},
		&cli.Float64Flag{Name: "cpus", Usage: "CPU limit (`N`, limits.cpus); the run fails where it cannot be enforced"},
		&cli.StringFlag{Name: "config", Usage: "use config `FILE` instead of the user config file; one a sandbox can write applies only once trusted (devsandbox config trust FILE)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print what would run (secrets and passed-through values as names only) and exit; stops (125) where a run would stop before starting, such as on a symlink planted where the sandbox can write"},
		&cli.BoolFlag{Name: "debug", Usage: "print launch timings per phase on stderr"},
		&cli.BoolFlag{Name: "version", Usage: "print the version and exit"},
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
	str := func(name string) *string { return opt(c, name, c.String) }
	f.Isolator, f.Mode, f.Egress, f.Image, f.Memory = str("isolator"), str("mode"), str("egress"), str("image"), str("memory")
	f.ReadOnly, f.KeepContainer = opt(c, "read-only", c.Bool), opt(c, "keep-container", c.Bool)
	f.Pids, f.CPUs = opt(c, "pids", c.Int), opt(c, "cpus", c.Float64)
	return f
}

// opt is the value of flag name when it was given, else nil (the layers below decide).
func opt[T any](c *cli.Context, name string, get func(string) T) *T {
	if !c.IsSet(name) {
		return nil
	}
	v := get(name)
	return &v
}

func (a *app) warn(format string, args ...any) {
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	fmt.Fprintf(a.stderr, "devsandbox: warning: %s\n", termsafe.Line(fmt.Sprintf(format, args...)))
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
