package main

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		args                []string
		flags, sub, command []string
	}{
		{nil, nil, nil, nil},
		{[]string{"--", "doctor"}, nil, nil, []string{"doctor"}},
		{[]string{"doctor"}, nil, []string{"doctor"}, nil},
		{[]string{"--debug", "ls", "-la"}, []string{"--debug"}, nil, []string{"ls", "-la"}},
		{[]string{"-e", "A=1,B=2", "--egress", "none", "--", "sh", "-c", "x"},
			[]string{"-e", "A=1,B=2", "--egress", "none"}, nil, []string{"sh", "-c", "x"}},
		{[]string{"--egress=none", "env"}, []string{"--egress=none"}, nil, []string{"env"}},
		{[]string{"--isolator", "doctor", "true"}, []string{"--isolator", "doctor"}, nil, []string{"true"}},
		{[]string{"config", "show", "--json"}, nil, []string{"config", "show", "--json"}, nil},
		{[]string{"--dry-run"}, []string{"--dry-run"}, nil, nil},
		{[]string{"--allow", "--", "make"}, []string{"--allow"}, nil, []string{"make"}},
		{[]string{"--allow=--", "--", "make"}, []string{"--allow=--"}, nil, []string{"make"}},
	}
	for _, tt := range tests {
		f, s, c := splitArgs(tt.args)
		if !reflect.DeepEqual(f, tt.flags) || !reflect.DeepEqual(s, tt.sub) || !reflect.DeepEqual(c, tt.command) {
			t.Errorf("splitArgs(%q) = %q, %q, %q; want %q, %q, %q", tt.args, f, s, c, tt.flags, tt.sub, tt.command)
		}
	}
}

// TestSplitArgsValueFlags: a flag's value given as the next word is the flag's, as
// --help writes them ("--pids N"), not the command.
func TestSplitArgsValueFlags(t *testing.T) {
	for _, tt := range [][]string{
		{"--pids", "100"}, {"--memory", "4g"}, {"--cpus", "2"}, {"--image", "x:1"}, {"-p", "3000:3000"},
	} {
		args := append(append([]string{}, tt...), "--", "true")
		f, s, c := splitArgs(args)
		if !reflect.DeepEqual(f, tt) || s != nil || !reflect.DeepEqual(c, []string{"true"}) {
			t.Errorf("splitArgs(%q) = %q, %q, %q; want the flags %q and the command [true]", args, f, s, c, tt)
		}
	}
}

// TestValueFlagsMatchRunFlags: splitArgs's table of flags that take a value is
// exactly the run flags that take one, by every name, so a new flag cannot leave its
// value to be taken for the command.
func TestValueFlagsMatchRunFlags(t *testing.T) {
	want := map[string]bool{}
	for _, f := range runFlags() {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			t.Fatalf("flag %q: no TakesValue", f.Names())
		}
		if !df.TakesValue() {
			continue
		}
		for _, n := range f.Names() {
			if len(n) == 1 {
				want["-"+n] = true
			} else {
				want["--"+n] = true
			}
		}
	}
	if !reflect.DeepEqual(valueFlags, want) {
		t.Errorf("valueFlags = %v\nrunFlags take a value: %v", slices.Sorted(maps.Keys(valueFlags)), slices.Sorted(maps.Keys(want)))
	}
}

// TestSubcommandsMatchCommands: the words splitArgs takes for a subcommand are the
// app's commands (and urfave/cli's help), so a new subcommand is not run as a program.
func TestSubcommandsMatchCommands(t *testing.T) {
	a, _, _ := testApp()
	want := map[string]bool{"help": true}
	for _, c := range a.commands() {
		for _, n := range c.Names() {
			want[n] = true
		}
	}
	if !reflect.DeepEqual(subcommands, want) {
		t.Errorf("subcommands = %v\ncommands: %v", slices.Sorted(maps.Keys(subcommands)), slices.Sorted(maps.Keys(want)))
	}
}
