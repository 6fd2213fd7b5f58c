package bwrap_test

import (
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/bwrap"
)

// With Plan.BwrapInit set, bwrap runs it as the sandbox's pid 1 in Self's place:
// bound at InitPath when the sandbox does not show it, run where it is when it does.
func TestRenderBwrapInit(t *testing.T) {
	for _, c := range []struct {
		name, bwrapInit string
		inView          bool
	}{
		{"outside the view", "/home/u/.local/bin/devsandbox-bwrap-init", false},
		{"in the view", "/usr/libexec/devsandbox/devsandbox-bwrap-init", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := basePlan()
			p.System.Paths = minimalSystem
			p.Self = "/home/u/.local/bin/devsandbox-init"
			p.BwrapInit = c.bwrapInit
			spec, err := bwrap.Render(p)
			if err != nil {
				t.Fatal(err)
			}
			a := spec.Argv
			if slices.Contains(a, p.Self) {
				t.Errorf("argv names Self %s, not BwrapInit: %q", p.Self, a)
			}
			run := slices.Index(a, "--as-pid-1")
			if run < 0 {
				t.Fatalf("no --as-pid-1 in %q", a)
			}
			end := slices.Index(a, "--")
			if end < 0 || end+1 >= len(a) {
				t.Fatalf("no command in %q", a)
			}
			bound := slices.Index(a, c.bwrapInit)
			switch {
			case c.inView && a[end+1] != c.bwrapInit:
				t.Errorf("the init in the view is not run in place: %q", a)
			case !c.inView && (bound < 1 || a[bound-1] != "--ro-bind" || a[bound+1] != bwrap.InitPath || a[end+1] != bwrap.InitPath):
				t.Errorf("the init outside the view is not bound at and run as %s: %q", bwrap.InitPath, a)
			}
		})
	}
}
