package planner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/tools"
)

// The inits installed next to devsandbox decide Plan.Self (every isolator's init)
// and Plan.BwrapInit (the bwrap isolator's, when installed).
func TestBuildInits(t *testing.T) {
	for _, c := range []struct {
		name            string
		installed       []string
		self, bwrapInit string
	}{
		{"both", []string{InitBinary, BwrapInitBinary}, InitBinary, BwrapInitBinary},
		{"devsandbox-init only", []string{InitBinary}, InitBinary, ""},
		{"none", nil, "devsandbox", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			bin := t.TempDir()
			for _, n := range append([]string{"devsandbox"}, c.installed...) {
				if err := os.WriteFile(filepath.Join(bin, n), nil, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			pr := probe(f.proj)
			pr.Executable = func() (string, error) { return filepath.Join(bin, "devsandbox"), nil }
			p, _, err := Build(f.load(t), tools.Default(), pr, Request{Command: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			want := func(n string) string {
				if n == "" {
					return ""
				}
				return filepath.Join(bin, n)
			}
			if p.Self != want(c.self) || p.BwrapInit != want(c.bwrapInit) {
				t.Errorf("Self %q, BwrapInit %q; want %q, %q", p.Self, p.BwrapInit, want(c.self), want(c.bwrapInit))
			}
		})
	}
}
