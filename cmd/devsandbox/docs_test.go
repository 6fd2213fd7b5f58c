package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/internal/keytable"
)

// userDocs are the user-facing pages; the command lines they show must run.
var userDocs = []string{"../../README.md", "../../docs/configuration.md", "../../docs/isolators.md",
	"../../docs/security-model.md", "../../docs/tools.md", "../../docs/architecture.md", "../../docs/performance.md"}

// findFlag returns the flag called name (any of its names), or nil.
func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if slices.Contains(c.Names(), name) {
			return c
		}
	}
	return nil
}

// checkInvocation checks one documented command line (the words after
// "devsandbox") against the CLI: each flag exists where it is written (before the
// subcommand: the run flags; after it: that subcommand's), each subcommand word names
// one ("a|b" names several). The first word that is neither ends the check at the top
// level (the program to sandbox) and is an argument in a subcommand without
// subcommands of its own.
func checkInvocation(words []string, cmds []*cli.Command) error {
	flags := append(runFlags(), cli.HelpFlag)
	var cur *cli.Command
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		switch {
		case w == "--" || w == "":
			return nil
		case strings.HasPrefix(w, "-") && w != "-":
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := findFlag(flags, name)
			if f == nil {
				where := "devsandbox"
				if cur != nil {
					where = "devsandbox … " + cur.Name
				}
				return fmt.Errorf("%s has no flag %s", where, w)
			}
			if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() && !hasValue {
				i++ // its value
			}
		default:
			alts := strings.Split(w, "|")
			var next *cli.Command
			for _, alt := range alts {
				c := findCommand(cmds, alt)
				if c == nil && len(alts) > 1 {
					return fmt.Errorf("%q: no subcommand %s", w, alt)
				}
				if next == nil {
					next = c
				}
			}
			switch {
			case next != nil:
				cur, cmds, flags = next, next.Subcommands, append(slices.Clone(next.Flags), cli.HelpFlag)
			case cur == nil:
				return nil // the program to sandbox
			case len(cmds) > 0:
				return fmt.Errorf("devsandbox … %s has no subcommand %s", cur.Name, w)
			case cur.ArgsUsage == "":
				return fmt.Errorf("devsandbox … %s takes no arguments, but is given %s", cur.Name, w)
			}
		}
	}
	return nil
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	shellStop  = regexp.MustCompile(`\s(#|\||;|&&|>|<|2>)`)
)

// documentedInvocations returns, for each page, the command lines it shows: inline
// code and lines of fenced blocks that start with "devsandbox " (or "$ devsandbox "),
// cut at a shell comment, pipe or redirection.
func documentedInvocations(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	add := func(line int, s string) {
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$ "))
		rest, ok := strings.CutPrefix(s, "devsandbox ")
		if !ok {
			return
		}
		if m := shellStop.FindStringIndex(" " + rest); m != nil {
			rest = (" " + rest)[:m[0]]
		}
		out[fmt.Sprintf("%s:%d: devsandbox %s", path, line, strings.TrimSpace(rest))] = strings.Fields(rest)
	}
	fenced := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			add(n, line)
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			add(n, m[1])
		}
	}
	return out
}

// TestDocumentedInvocations: every devsandbox command line README.md and the pages
// of docs/ show uses flags and subcommands the CLI has, where it has them.
func TestDocumentedInvocations(t *testing.T) {
	a, _, _ := testApp()
	n := 0
	for _, doc := range userDocs {
		for where, words := range documentedInvocations(t, doc) {
			n++
			if err := checkInvocation(words, a.commands()); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d devsandbox command lines in %q: is the extraction broken?", n, userDocs)
	}
}

// TestCheckInvocation: the checker finds what it is for, so the test above cannot
// pass vacuously.
func TestCheckInvocation(t *testing.T) {
	a, _, _ := testApp()
	for _, tt := range []struct {
		line string
		bad  bool
	}{
		{"--egress=none -- make test", false},
		{"--pids 100 -- true", false},
		{"--isolator docker --image x:1 sh", false},
		{"sandboxes list|rm|prune", false},
		{"image build [--base IMAGE] [--tag NAME]", false},
		{"logs proxy --denied --suggest", false},
		{"sandboxes rm NAME", false},
		{"config validate FILE", false},
		{"--no-such-flag -- true", true},
		{"logs proxy --no-such-flag", true},
		{"config show --denied", true}, // a flag of another subcommand
		{"config frobnicate", true},
		{"sandboxes list|purge", true},
		{"sandboxes prune myproject-1234abcd", true}, // takes no arguments
		{"sandboxes prune --days 7 --dry-run", false},
	} {
		err := checkInvocation(strings.Fields(tt.line), a.commands())
		if (err != nil) != tt.bad {
			t.Errorf("devsandbox %s: error %v, want an error: %v", tt.line, err, tt.bad)
		}
	}
}

// TestDocsFlagColumn: the "flag / env" column of docs/configuration.md's key table
// names only flags the CLI has, and every run flag that sets a configuration key is
// named there (the others are about the run itself).
func TestDocsFlagColumn(t *testing.T) {
	rows, err := keytable.Read("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	flagWord := regexp.MustCompile(`(?:^|[\s` + "`" + `])(--?[a-z][a-z-]*)`)
	documented := map[string]bool{}
	for _, r := range rows {
		if len(r.Cells) < 3 {
			continue
		}
		for _, m := range flagWord.FindAllStringSubmatch(r.Cells[2], -1) {
			documented[strings.TrimLeft(m[1], "-")] = true
		}
	}
	if len(documented) == 0 {
		t.Fatal("no flags in the key table's flag column: is the extraction broken?")
	}
	run := runFlags()
	for name := range documented {
		if findFlag(run, name) == nil {
			t.Errorf("docs/configuration.md names the flag %q, which devsandbox does not have", name)
		}
	}
	notConfig := []string{"config", "dry-run", "debug", "version"}
	for _, fl := range run {
		if slices.Contains(notConfig, fl.Names()[0]) {
			continue
		}
		if !slices.ContainsFunc(fl.Names(), func(n string) bool { return documented[n] }) {
			t.Errorf("--%s sets configuration but the key table of docs/configuration.md does not name it", fl.Names()[0])
		}
	}
}
