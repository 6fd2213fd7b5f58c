package krun

import (
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
	"regexp"
	"testing"
)

// A dry run (Render: no host rlimits, no service read) says what a launch sets of
// every rlimit, not only the ones it prints as --ulimit flags: a launch gives the
// container all of them (the service's own for those the spec does not set).
func TestScriptNamesEveryRlimit(t *testing.T) {
	b := &Isolator{Settings: helper.Settings{Image: "devsandbox/default:test", Runtime: "krun", CPUs: 2, MemoryMiB: 2048, Pids: 4096}}
	r, err := b.Render(basePlan())
	if err != nil {
		t.Fatal(err)
	}
	script := r.(*Spec).Script()
	for name := range rlimitInfos {
		flag := regexp.MustCompile(`--ulimit ` + name + `=`)
		said := regexp.MustCompile(`(?m)^#   .*\b` + name + `\b.*: `)
		if !flag.MatchString(script) && !said.MatchString(script) {
			t.Errorf("the dry run does not say what a launch sets %s to:\n%s", name, script)
		}
	}
}
