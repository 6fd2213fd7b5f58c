package planner

import (
	"reflect"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// TestSystemHead: Build uses the system view worked out ahead only when the
// configuration asks for the default view with the same snapshot root; then is
// called with that view before Wait returns.
func TestSystemHead(t *testing.T) {
	f := newFixture(t)
	fake := t.TempDir() // a host whose default view differs from the real one
	mkdirs(t, fake+"/usr", fake+"/opt/x")
	writeFile(t, fake+"/etc/hosts", "")
	cfg := f.load(t)
	aheadView, err := systemView(chrootProbe(fake), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	own, _ := f.build(t, cfg)
	if reflect.DeepEqual(own.System.Paths, aheadView.Paths) {
		t.Fatal("the fake host's view is the real one's: the test shows nothing")
	}
	for _, tc := range []struct {
		name      string
		stateHome string
		binds     []string
		used      bool
	}{
		{"the default view", cfg.Host.StateHome, nil, true},
		{"system_binds set", cfg.Host.StateHome, []string{"/usr"}, false},
		{"another state directory", cfg.Host.StateHome + "2", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handed []isolator.SystemView
			head := StartSystem(chrootProbe(fake), tc.stateHome, func(v isolator.SystemView) { handed = append(handed, v) })
			c := *cfg
			c.Sandbox.SystemBinds = tc.binds
			p, _, err := Build(&c, tools.Default(), probe(f.proj), Request{Command: []string{"true"}, System: head})
			if err != nil {
				t.Fatal(err)
			}
			head.Wait()
			if len(handed) != 1 || !reflect.DeepEqual(handed[0].Paths, aheadView.Paths) {
				t.Errorf("then was handed %+v, want the view once", handed)
			}
			if used := reflect.DeepEqual(p.System.Paths, aheadView.Paths); used != tc.used {
				t.Errorf("the view ahead used: %v, want %v (%+v)", used, tc.used, p.System.Paths)
			}
		})
	}
}
