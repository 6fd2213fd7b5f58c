package planner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// BenchmarkHostLoadBuild is a launch's config and plan against the real host, in
// the working directory's project, as the user running it: run it as a user with
// an ordinary home (`go test -c`, then the binary as that user, in a project). The
// "--config" variant loads an empty --config file outside anything a sandbox can
// write instead of the user file: the trust check asks the whole list (this run's
// and every recorded project), its most costly case.
func BenchmarkHostLoadBuild(b *testing.B) {
	for _, explicit := range []bool{false, true} {
		name := "user file"
		if explicit {
			name = "--config"
		}
		b.Run(name, func(b *testing.B) {
			environ := os.Environ()
			egress := "open"
			flags := config.Flags{Egress: &egress}
			if explicit {
				flags.ConfigFile = filepath.Join(b.TempDir(), "dev.toml")
				if err := os.WriteFile(flags.ConfigFile, nil, 0o600); err != nil {
					b.Fatal(err)
				}
			}
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
		})
	}
}
