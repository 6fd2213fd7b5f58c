package planner

import (
	"os"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// BenchmarkHostLoadBuild is a launch's config and plan against the real host, in
// the working directory's project, as the user running it: run it as a user with
// an ordinary home (`go test -c`, then the binary as that user, in a project).
func BenchmarkHostLoadBuild(b *testing.B) {
	environ := os.Environ()
	egress := "open"
	flags := config.Flags{Egress: &egress}
	reg := tools.Default()
	for b.Loop() {
		l, err := Load(flags, environ, reg)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Build(l.Config, reg, l.Probe, Request{Command: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
}
