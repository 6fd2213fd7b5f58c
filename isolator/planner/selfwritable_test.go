package planner

import (
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/tools"
)

// TestBuildSelfWritableWarns: a devsandbox installed where the sandbox can write (the
// project, a writable_dirs entry of a read-only project, a read-write bind) is named
// in one warning; one outside, or in a read-only project, is not.
func TestBuildSelfWritableWarns(t *testing.T) {
	f := newFixture(t)
	toolDir := f.root + "/tools"
	mkdirs(t, f.proj+"/bin", toolDir+"/bin")
	for _, tc := range []struct {
		name, self string
		readOnly   bool
		writable   []string
		rw, ro     []string
		want       string // the warning's start; "" for none
	}{
		{name: "installed elsewhere", self: selfPath},
		{name: "in the project", self: f.proj + "/bin/devsandbox",
			want: "devsandbox runs from " + f.proj + "/bin, which this sandbox can write (as " + f.proj + "/bin, through project)"},
		{name: "in a read-only project", self: f.proj + "/bin/devsandbox", readOnly: true},
		{name: "in a writable_dirs entry", self: f.proj + "/bin/devsandbox", readOnly: true, writable: []string{"bin"},
			want: "devsandbox runs from " + f.proj + "/bin, which this sandbox can write (as " + f.proj + "/bin, through sandbox.writable_dirs)"},
		{name: "in a read-write bind", self: toolDir + "/bin/devsandbox", rw: []string{toolDir},
			want: "devsandbox runs from " + toolDir + "/bin, which this sandbox can write (as " + toolDir + "/bin, through sandbox.rw_binds)"},
		{name: "in a read-only bind", self: toolDir + "/bin/devsandbox", ro: []string{toolDir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.load(t)
			cfg.Sandbox.ReadOnly, cfg.Sandbox.WritableDirs = tc.readOnly, tc.writable
			cfg.Sandbox.RWBinds, cfg.Sandbox.ROBinds = tc.rw, tc.ro
			pr := probe(f.proj)
			pr.Executable = func() (string, error) { return tc.self, nil }
			_, warns, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var got []string
			for _, w := range warns {
				if strings.HasPrefix(w, "devsandbox runs from ") {
					got = append(got, w)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("want no warning, got %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.want+": a sandboxed program could replace devsandbox")):
				t.Errorf("want one warning starting %q, got %q", tc.want, got)
			}
		})
	}
}
