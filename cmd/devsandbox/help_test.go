package main

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/clihelp"
)

// testApp is an app writing to buffers, for exercising the CLI without running a sandbox.
func testApp() (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &app{stdout: &out, stderr: &errb, environ: []string{"HOME=/nonexistent"}}, &out, &errb
}

// commandPaths lists every subcommand as the words that name it.
func commandPaths(prefix []string, cmds []*cli.Command) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(append([]string{}, prefix...), c.Name)
		out = append(out, p)
		out = append(out, commandPaths(p, c.Subcommands)...)
	}
	return out
}

// Help reads in an 80-column terminal (the top level) or a 100-column one (the
// subcommands, laid out by urfave/cli), and the top level names every flag.
func TestHelpWidth(t *testing.T) {
	a, out, _ := testApp()
	if code := a.main([]string{"--help"}); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	top := out.String()
	for _, l := range strings.Split(top, "\n") {
		if len(l) > clihelp.Width {
			t.Errorf("--help line of %d columns: %q", len(l), l)
		}
	}
	for _, f := range runFlags() {
		if !strings.Contains(top, "--"+f.Names()[0]) {
			t.Errorf("--help does not name --%s", f.Names()[0])
		}
	}
	if !strings.Contains(top, "EXIT STATUS:") || !strings.Contains(top, "125 when devsandbox itself failed or\n   was misused") {
		t.Errorf("--help does not document the exit statuses:\n%s", top)
	}
	for _, path := range commandPaths(nil, a.commands()) {
		a, out, _ := testApp()
		if code := a.main(append(path, "--help")); code != 0 {
			t.Errorf("%s --help exited %d", strings.Join(path, " "), code)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if len(l) > 100 {
				t.Errorf("devsandbox %s --help: a line of %d columns: %q", strings.Join(path, " "), len(l), l)
			}
		}
	}
}

// Misuse of the command line exits 125 with one line naming the problem, at the top
// level and in every subcommand; --version answers like the version subcommand.
func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus", "true"}, "devsandbox: unknown flag --bogus\n"},
		{[]string{"doctor", "--bogus"}, "devsandbox: unknown flag --bogus\n"},
		{[]string{"logs", "proxy", "-x"}, "devsandbox: unknown flag -x\n"},
		{[]string{"config", "validate"}, "devsandbox: config validate needs exactly one FILE\n"},
		{[]string{"--pids"}, "devsandbox: flag --pids needs a value\n"},
		{[]string{"--pids", "many", "--", "true"}, "devsandbox: flag --pids: \"many\" is not a whole number\n"},
		{[]string{"--cpus=x", "true"}, "devsandbox: flag --cpus: \"x\" is not a number\n"},
		{[]string{"--read-only=maybe", "true"}, "devsandbox: flag --read-only: \"maybe\" is not true or false (--read-only alone means true)\n"},
		{[]string{"sandboxes", "prune", "--days", "abc"}, "devsandbox: flag --days: \"abc\" is not a whole number\n"},
		{[]string{"--pids", "1.5", "true"}, "devsandbox: flag --pids: \"1.5\" is not a whole number\n"},
		{[]string{"-e"}, "devsandbox: flag -e needs a value\n"},
		{[]string{"--allow", "--", "make"}, "devsandbox: flag --allow needs a value\n"},
		{[]string{"--config", "--", "true"}, "devsandbox: flag --config needs a value\n"},
		{[]string{"config", "trust", "a.toml", "b.toml"}, "devsandbox: config trust takes at most one FILE\n"},
		{[]string{"config", "init", "a.toml", "b.toml"}, "devsandbox: config init takes at most one FILE\n"},
		{[]string{"config", "bogus"}, "devsandbox: config bogus: no such command (config show|validate|init|trust)\n"},
		{[]string{"sandboxes", "prune", "--days", "-1"}, "devsandbox: sandboxes prune --days -1: not a number of days from 0 to 106751\n"},
		{[]string{"sandboxes", "prune", "--days", "200000", "--dry-run"}, "devsandbox: sandboxes prune --days 200000: not a number of days from 0 to 106751\n"},
		{[]string{"sandboxes", "prune", "myproject-1234abcd"}, "devsandbox: sandboxes prune takes no arguments (got \"myproject-1234abcd\")\n"},
	} {
		a, out, errb := testApp()
		if code := a.main(tt.args); code != exitFailure || !strings.HasPrefix(errb.String(), tt.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and %q", tt.args, code, out, errb, tt.want)
		}
	}
	a, out, _ := testApp()
	if code := a.main([]string{"--version"}); code != 0 || !strings.HasPrefix(out.String(), "devsandbox ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// The top-level page is laid out only when it may be shown; every way of asking
// for it still gets it, not urfave/cli's default page.
func TestHelpPageLaidOutWhenAsked(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"--help=true"}, {"help"}, {"--egress", "open", "--help"}} {
		a, out, _ := testApp()
		if code := a.main(args); code != 0 {
			t.Errorf("%v exited %d", args, code)
		}
		if !strings.Contains(out.String(), "EXIT STATUS:") {
			t.Errorf("%v: not the devsandbox help page:\n%s", args, out.String())
		}
	}
	for _, flags := range [][]string{nil, {"--egress", "open"}, {"--image", "help"}, {"--debug"}} {
		if asksHelp(flags) {
			t.Errorf("asksHelp(%q) = true", flags)
		}
	}
}

// `version` and `--version` skip urfave/cli (versionOnly) and answer exactly as the
// command line does; every other spelling still goes through it.
func TestVersionFastPath(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if !versionOnly(args) {
			t.Fatalf("%q takes no fast path", args)
		}
		fast, fout, ferr := testApp()
		slow, sout, serr := testApp()
		fcode, scode := fast.main(args), slow.mainCLI(args)
		if fcode != scode || fout.String() != sout.String() || ferr.String() != serr.String() {
			t.Errorf("%q: fast path exit %d, stdout %q, stderr %q; urfave/cli's exit %d, stdout %q, stderr %q",
				args, fcode, fout, ferr, scode, sout, serr)
		}
		if want := "devsandbox " + config.Version + "\n"; fout.String() != want {
			t.Errorf("%q printed %q, want %q", args, fout, want)
		}
	}
	for _, args := range [][]string{nil, {"-version"}, {"--version=true"}, {"version", "--help"}, {"--version", "true"}, {"--", "version"}, {"--debug", "version"}} {
		if versionOnly(args) {
			t.Errorf("%q takes the fast path", args)
		}
	}
}

// A command that takes no arguments refuses one (125) before it does anything, and a
// command made of subcommands refuses a word that is none of them: every command of
// the CLI, so a new one cannot ignore what it is given (`sandboxes prune NAME` pruned
// every project, `config trust A B` trusted the project file).
func TestUnexpectedArguments(t *testing.T) {
	n := 0
	for _, path := range commandPaths(nil, testAppCommands()) {
		cmds, cmd := testAppCommands(), (*cli.Command)(nil)
		for _, w := range path {
			cmd = findCommand(cmds, w)
			cmds = cmd.Subcommands
		}
		if cmd.Name == "help" || cmd.ArgsUsage != "" {
			continue
		}
		n++
		want := "devsandbox: " + strings.Join(path, " ") + " takes no arguments (got \"extra\")\n"
		if len(cmd.Subcommands) > 0 {
			want = "devsandbox: " + strings.Join(path, " ") + " extra: no such command ("
		}
		a, out, errb := testApp()
		if code := a.main(append(path, "extra")); code != exitFailure || !strings.HasPrefix(errb.String(), want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and %q", path, code, out, errb, want)
		}
	}
	if n < 10 {
		t.Fatalf("checked %d commands: is the command list broken?", n)
	}
}

func testAppCommands() []*cli.Command {
	a, _, _ := testApp()
	return a.commands()
}

// The usage line of a command made of subcommands names them, not "[command
// options]" as if it took options of its own.
func TestGroupUsageNamesSubcommands(t *testing.T) {
	n := 0
	for _, path := range commandPaths(nil, testAppCommands()) {
		cmds, cmd := testAppCommands(), (*cli.Command)(nil)
		for _, w := range path {
			cmd = findCommand(cmds, w)
			cmds = cmd.Subcommands
		}
		if len(cmd.Subcommands) == 0 {
			continue
		}
		n++
		var names []string
		for _, s := range cmd.Subcommands {
			names = append(names, s.Name)
		}
		a, out, _ := testApp()
		if code := a.main(append(path, "--help")); code != 0 {
			t.Fatalf("%q --help exited %d", path, code)
		}
		want := "USAGE:\n   devsandbox " + strings.Join(path, " ") + " " + strings.Join(names, "|") + " [options]\n"
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q --help has no %q:\n%s", path, want, out)
		}
	}
	if n < 5 {
		t.Fatalf("checked %d command groups: is the command list broken?", n)
	}
}

// TestNumberFlagKinds holds wholeNumberFlags and numberFlags, which word a value that
// does not parse, to the CLI's integer and float flags.
func TestNumberFlagKinds(t *testing.T) {
	ints, floats := map[string]bool{}, map[string]bool{}
	var walk func(flags []cli.Flag, cmds []*cli.Command)
	walk = func(flags []cli.Flag, cmds []*cli.Command) {
		for _, f := range flags {
			switch f.(type) {
			case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
				ints[f.Names()[0]] = true
			case *cli.Float64Flag:
				floats[f.Names()[0]] = true
			}
		}
		for _, c := range cmds {
			walk(c.Flags, c.Subcommands)
		}
	}
	walk(runFlags(), testAppCommands())
	if !maps.Equal(ints, wholeNumberFlags) {
		t.Errorf("integer flags %v, wholeNumberFlags %v", ints, wholeNumberFlags)
	}
	if !maps.Equal(floats, numberFlags) {
		t.Errorf("float flags %v, numberFlags %v", floats, numberFlags)
	}
}
