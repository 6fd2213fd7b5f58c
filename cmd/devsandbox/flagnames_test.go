package main

import (
	"reflect"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
)

// TestFixedNames: the run's flags with their names worked out once parse every
// command line as the flags themselves do, and each of them is wrapped (a flag of a
// new type would fall back to urfave/cli's lookups unnoticed otherwise).
func TestFixedNames(t *testing.T) {
	plain := runFlags()
	fixed := fixedNames(runFlags())
	for i, f := range fixed {
		if reflect.TypeOf(f) == reflect.TypeOf(plain[i]) {
			t.Errorf("%T %s is not wrapped", plain[i], plain[i].Names()[0])
		}
		if !slices.Equal(f.Names(), plain[i].Names()) {
			t.Errorf("names %q, want %q", f.Names(), plain[i].Names())
		}
	}
	lines := [][]string{
		{},
		{"--egress=open"},
		{"--egress", "none", "--isolator", "bwrap", "--mode=auto", "--image", "x:1", "--memory", "1g"},
		{"-e", "A=1", "-e", "B", "-p", "8080:80", "-p=9090:90", "--allow", "a.example", "--allow=b.example"},
		{"--env", "A=1", "--publish=9090:90"},
		{"--secret-file", "T=/x", "--mount", "/a:/b:ro", "--config", "/c.toml"},
		{"--read-only", "--keep-container=false", "--pids", "0", "--cpus=1.5", "--debug", "--dry-run"},
		{"--read-only=false", "--pids=12"},
	}
	parse := func(flags []cli.Flag, args []string) (config.Flags, []bool) {
		var got config.Flags
		var bools []bool
		a := &app{}
		app := &cli.App{Name: "devsandbox", Flags: flags, DisableSliceFlagSeparator: true,
			ExitErrHandler: func(*cli.Context, error) {},
			Action: func(c *cli.Context) error {
				got = a.flags(c)
				bools = []bool{c.Bool("debug"), c.Bool("dry-run"), c.Bool("version")}
				return nil
			}}
		if err := app.Run(append([]string{"devsandbox"}, args...)); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return got, bools
	}
	for _, args := range lines {
		want, wantBools := parse(runFlags(), args)
		got, gotBools := parse(fixedNames(runFlags()), args)
		if !reflect.DeepEqual(got, want) || !slices.Equal(gotBools, wantBools) {
			t.Errorf("%q: parsed as %+v %v, want %+v %v", args, got, gotBools, want, wantBools)
		}
	}
}
