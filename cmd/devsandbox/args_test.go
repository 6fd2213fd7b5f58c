package main

import (
	"reflect"
	"testing"
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
	}
	for _, tt := range tests {
		f, s, c := splitArgs(tt.args)
		if !reflect.DeepEqual(f, tt.flags) || !reflect.DeepEqual(s, tt.sub) || !reflect.DeepEqual(c, tt.command) {
			t.Errorf("splitArgs(%q) = %q, %q, %q; want %q, %q, %q", tt.args, f, s, c, tt.flags, tt.sub, tt.command)
		}
	}
}
