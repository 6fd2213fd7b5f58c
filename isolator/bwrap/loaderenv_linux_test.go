package bwrap_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
)

// A variable of the dynamic loader's set for the command reaches bwrap, which runs on
// the host, renamed (the init names it back), and the script says so; the others
// pass as they are. (TestLoaderEnvNotHonouredOnTheHost runs it.)
func TestLoaderEnvRenamedForBwrap(t *testing.T) {
	p := basePlan()
	p.Env = append(p.Env, isolator.EnvVar{Name: "LD_PRELOAD", Value: "/p/x.so"}, isolator.EnvVar{Name: "LD_LIBRARY_PATH", Value: "/p/lib"})
	env, err := bwrap.Env(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "LD_") {
			t.Errorf("bwrap's environment holds %q", kv)
		}
	}
	for _, want := range []string{"DEVSANDBOX_LOADER_LD_PRELOAD=/p/x.so", "DEVSANDBOX_LOADER_LD_LIBRARY_PATH=/p/lib", "DEVSANDBOX=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("bwrap's environment lacks %q: %q", want, env)
		}
	}
	spec, err := bwrap.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.Script(); !strings.Contains(s, "#   LD_PRELOAD=/p/x.so (to bwrap as DEVSANDBOX_LOADER_LD_PRELOAD: the init names it back)\n") {
		t.Errorf("the script does not say LD_PRELOAD is renamed:\n%s", s)
	}
}

// Without the init nothing names a loader variable back, so a plan that sets one and
// has no init is refused rather than run with it renamed (or obeyed by bwrap).
func TestLoaderEnvNeedsInit(t *testing.T) {
	p := basePlan()
	p.Self, p.BwrapInit = "", ""
	p.Syscalls.Unfiltered, p.Limits.Pids = true, 0
	if _, err := bwrap.Render(p); err != nil {
		t.Fatalf("a plan without an init and without loader variables: %v", err)
	}
	p.Env = append(p.Env, isolator.EnvVar{Name: "LD_LIBRARY_PATH", Value: "/p/lib"})
	if _, err := bwrap.Render(p); err == nil || !strings.Contains(err.Error(), "LD_LIBRARY_PATH") || !strings.Contains(err.Error(), "Plan.Self") {
		t.Fatalf("a plan without an init setting LD_LIBRARY_PATH: %v, want an error naming it and Plan.Self", err)
	}
}
