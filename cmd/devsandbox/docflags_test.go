package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// paragraphs splits the user pages into paragraphs (blank-line separated; a table row
// or a list item is one on its own), each with its line breaks made spaces.
func paragraphs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range userDocs {
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var cur []string
		flush := func() {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, " "))
				cur = nil
			}
		}
		for _, line := range strings.Split(string(doc), "\n") {
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || strings.HasPrefix(trimmed, "|") || strings.HasPrefix(trimmed, "- ") {
				flush()
			}
			if trimmed != "" {
				cur = append(cur, trimmed)
			}
		}
		flush()
	}
	return out
}

// TestDocsNameEveryFlag: every long flag --help shows is in README.md or docs/:
// a run flag anywhere, a subcommand's flag in a paragraph that names the subcommand
// ("tools list" ... "--json"), so a flag added without a word in the docs fails here.
func TestDocsNameEveryFlag(t *testing.T) {
	paras := paragraphs(t)
	has := func(flag, command string) bool {
		re := regexp.MustCompile(regexp.QuoteMeta(flag) + `\b`)
		for _, p := range paras {
			if re.MatchString(p) && (command == "" || strings.Contains(p, command)) {
				return true
			}
		}
		return false
	}
	n := 0
	check := func(command string, flags []cli.Flag) {
		for _, f := range flags {
			name := f.Names()[0]
			if name == "help" || len(name) == 1 {
				continue
			}
			n++
			if !has("--"+name, command) {
				where := "anywhere"
				if command != "" {
					where = "in a paragraph that names " + command
				}
				t.Errorf("--%s of devsandbox %s is not in README.md or docs/ %s", name, command, where)
			}
		}
	}
	check("", runFlags())
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			check(path, c.Flags)
			walk(path, c.Subcommands)
		}
	}
	walk("", testAppCommands())
	if n < 25 {
		t.Fatalf("checked only %d flags: is the command walk broken?", n)
	}
}
