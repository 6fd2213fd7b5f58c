package sandboxinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// The bwrap init runs the command only once the manifest's checks pass (the checks
// run beside the signal subscription, and the command must still wait for them),
// and the command does not inherit the manifest.
func TestMainRunsCommandOnlyAfterChecks(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name     string
		manifest string
		want     int
		ran      bool
	}{
		{"passing", wire.EncodeChecks(nil, ""), 4, true},
		{"failing", wire.EncodeChecks([]wire.Check{{Kind: wire.CheckRW, Path: missing}}, ""), ExitSetupFailed, false},
		{"unreadable", "checks/1\nnot a check\n", ExitSetupFailed, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=main", wire.ManifestEnv+"="+c.manifest,
				// Exit 9 if the manifest reached the command.
				`HELPER_SCRIPT=test -z "$`+wire.ManifestEnv+`" || exit 9; : > `+marker+`; exit 4`)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.want {
				t.Errorf("exit status %d, want %d (output %q)", code, c.want, out)
			}
			if _, err := os.Stat(marker); (err == nil) != c.ran {
				t.Errorf("the command ran: %v, want %v (output %q)", err == nil, c.ran, out)
			}
		})
	}
}
