//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHostViewSocketVanishes: a host socket listed when the Plan is built and gone
// before the sandbox starts (a service stopping) leaves nothing to mask: the run
// goes ahead, and the socket still there stays masked. The embedding harness
// removes the socket between planner.Build and Run, so no timing is involved. On
// s27 bwrap could not create the mask's destination in the read-only view and the
// run stopped (125).
func TestHostViewSocketVanishes(t *testing.T) {
	requireBwrap(t)
	for _, tc := range []struct{ name, config, shown string }{
		{"host view", "system_binds = [\"host\"]\n", ""},
		{"ro_binds of its directory", "ro_binds = [%q]\n", ""},
		{"its directory moved", "host_mounts = [\"%s:/mnt/dsb-vanish\"]\n", "/mnt/dsb-vanish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			dir := userDirIn(t, "/var/tmp", "dsb-vanish-")
			gone, stays := filepath.Join(dir, "gone.sock"), filepath.Join(dir, "stays.sock")
			answerOn(t, gone, "GONE-ANSWERED")
			answerOn(t, stays, "STAYS-ANSWERED")
			config := tc.config
			if config != "system_binds = [\"host\"]\n" {
				config = fmt.Sprintf(config, dir)
			}
			shown := dir
			if tc.shown != "" {
				shown = tc.shown
			}
			cfg := p.writeConfig("bwrap", "view.toml", "[sandbox]\n"+config)
			script := unixConnectScript(filepath.Join(shown, "gone.sock")) + "; " + unixConnectScript(filepath.Join(shown, "stays.sock"))
			e := startEmbed(t, embedJob{Iso: "bwrap", Dirs: []string{p.dir}, Script: script, Egress: "none", Config: cfg, Unlink: gone}, p.root)
			outs, res := e.results(t, time.Minute)
			if res[0] != "0 nil" || fmt.Sprint(outs[0]) != "[refused refused]" {
				t.Fatalf("%s, %s removed after the Plan was built: want the run to go ahead and both refused, got result %q, output %q\nharness stderr:\n%s", config, gone, res[0], outs[0], e.stderr.String())
			}
			// A mask's destination made in a read-write bind would be a file left on the host.
			if _, err := os.Lstat(gone); !os.IsNotExist(err) {
				t.Errorf("%s is back on the host after the run (%v): the vanished socket's mask made it", gone, err)
			}
		})
	}
}

// userDirIn makes a fresh directory in parent owned by the test user, mode 0755
// (sockets in it are the host's; the test user may remove them).
func userDirIn(t *testing.T, parent, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	return dir
}
