package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// flagListing is every command of the CLI with its flags: names, the value's
// placeholder and the default --help shows. The usage text is left out (TestHelpWidth
// lays it out; the docs tests check the pages' command lines).
func flagListing(a *app) string {
	var b strings.Builder
	describe := func(path string, flags []cli.Flag) {
		fmt.Fprintf(&b, "%s\n", path)
		for _, f := range flags {
			names := make([]string, 0, len(f.Names()))
			for _, n := range f.Names() {
				if len(n) == 1 {
					names = append(names, "-"+n)
				} else {
					names = append(names, "--"+n)
				}
			}
			line := "  " + strings.Join(names, ", ")
			if df, ok := f.(cli.DocGenerationFlag); ok {
				if df.TakesValue() {
					// The placeholder is the usage's `quoted` word, as urfave/cli shows it.
					placeholder := "value"
					if _, rest, ok := strings.Cut(df.GetUsage(), "`"); ok {
						if word, _, ok := strings.Cut(rest, "`"); ok {
							placeholder = word
						}
					}
					line += " " + placeholder
				}
				// A zero default is "not given": the configuration's layers decide.
				if d := df.GetDefaultText(); d != "" && d != "false" && d != "0" {
					line += " (default: " + d + ")"
				}
			}
			fmt.Fprintln(&b, line)
		}
	}
	describe("devsandbox", runFlags())
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := prefix + " " + strings.Join(c.Names(), "|")
			if c.ArgsUsage != "" {
				p += " " + c.ArgsUsage
			}
			describe(p, c.Flags)
			walk(prefix+" "+c.Name, c.Subcommands)
		}
	}
	walk("devsandbox", a.commands())
	return b.String()
}

// TestFlagListing holds the CLI's commands and flags to testdata/flags.golden, so a
// flag added, renamed or given another default shows up in review beside the docs
// that name it (README.md, docs/configuration.md's key table). `go test -update`
// rewrites it.
func TestFlagListing(t *testing.T) {
	a, _, _ := testApp()
	got := flagListing(a)
	golden := filepath.Join("testdata", "flags.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the CLI's commands and flags changed; check README.md, docs/ and --help, then run go test -update:\ngot:\n%s\nwant:\n%s", got, want)
	}
}
